package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/readyline/readyline/exporter/apiauth"
	"github.com/readyline/readyline/exporter/apiclient"
	"github.com/readyline/readyline/exporter/podstartapi"
)

// pollErrors counts the polls of a node's daemon that failed,
// notModified those that found its starts as it said last.
var pollErrors, notModified atomic.Int64

// podStarts is the podstarts resource: list and watch from the summaries
// the nodes reported, get from the node that has the pod (its timeline,
// as the reader may read it).
type podStarts struct {
	store  *summaries
	nodes  *nodeClient
	ips    func(node string) (string, bool) // where node's daemon answers
	logger *slog.Logger
}

var (
	_ rest.Storage              = (*podStarts)(nil)
	_ rest.Scoper               = (*podStarts)(nil)
	_ rest.Getter               = (*podStarts)(nil)
	_ rest.Lister               = (*podStarts)(nil)
	_ rest.Watcher              = (*podStarts)(nil)
	_ rest.SingularNameProvider = (*podStarts)(nil)
)

func (*podStarts) New() runtime.Object     { return &podstartapi.PodStart{} }
func (*podStarts) NewList() runtime.Object { return &podstartapi.PodStartList{} }
func (*podStarts) Destroy()                {}
func (*podStarts) NamespaceScoped() bool   { return true }
func (*podStarts) GetSingularName() string { return "podstart" }
func (*podStarts) ShortNames() []string    { return []string{"pst"} }
func (*podStarts) Categories() []string    { return []string{"readyline"} }

// fieldsOf are the fields a field selector may name.
func fieldsOf(ps *podstartapi.PodStart) fields.Set {
	return fields.Set{
		"metadata.name":      ps.Name,
		"metadata.namespace": ps.Namespace,
		"spec.nodeName":      ps.Spec.NodeName,
		"status.outcome":     ps.Status.Outcome,
	}
}

// fieldLabel is the scheme's field label conversion of PodStart.
func fieldLabel(label, value string) (string, string, error) {
	switch label {
	case "metadata.name", "metadata.namespace", "spec.nodeName", "status.outcome":
		return label, value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s (podstarts select by metadata.name, metadata.namespace, spec.nodeName, status.outcome)", label)
}

// matcher is what a list or watch of options selects in the request's
// namespace.
func matcher(ctx context.Context, options *metainternalversion.ListOptions) func(*podstartapi.PodStart) bool {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	lsel, fsel := labels.Everything(), fields.Everything()
	if options != nil {
		if options.LabelSelector != nil {
			lsel = options.LabelSelector
		}
		if options.FieldSelector != nil {
			fsel = options.FieldSelector
		}
	}
	return func(ps *podstartapi.PodStart) bool {
		return (ns == "" || ps.Namespace == ns) && lsel.Matches(labels.Set(ps.Labels)) && fsel.Matches(fieldsOf(ps))
	}
}

// selects says whether options select by label or field.
func selects(options *metainternalversion.ListOptions) bool {
	return options != nil && ((options.LabelSelector != nil && !options.LabelSelector.Empty()) ||
		(options.FieldSelector != nil && !options.FieldSelector.Empty()))
}

// List lists the starts that match, by namespace and name, in pages of
// options.Limit when set (kubectl asks for 500 at a time): a page's
// continue token is where the next begins, read from the store as it is
// then (the store keeps no snapshots: a start added or gone between two
// pages shows or not, as with a continue token the API server no longer
// holds).
func (p *podStarts) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	match := matcher(ctx, options)
	var limit int64
	var after *podKey
	if options != nil {
		limit = options.Limit
		if options.Continue != "" {
			k, err := decodeContinue(options.Continue)
			if err != nil {
				return nil, err
			}
			after = &k
		}
	}
	pg := p.store.Page(ns, after, int(min(limit, math.MaxInt32)), match, !selects(options))
	list := &podstartapi.PodStartList{Items: pg.Items}
	list.ResourceVersion = formatRV(pg.RV)
	if pg.More {
		last := pg.Items[len(pg.Items)-1]
		list.Continue = encodeContinue(podKey{last.Namespace, last.Name})
		if pg.Remaining >= 0 {
			list.RemainingItemCount = &pg.Remaining
		}
	}
	return list, nil
}

// encodeContinue and decodeContinue write and read a continue token: the
// key of the last start of a page.
func encodeContinue(k podKey) string {
	b, _ := json.Marshal([]string{k.namespace, k.name})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(token string) (podKey, error) {
	var parts []string
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(b, &parts)
	}
	if err != nil || len(parts) != 2 {
		return podKey{}, apierrors.NewBadRequest(fmt.Sprintf("continue %q: not a pod starts' continue token", token))
	}
	return podKey{parts[0], parts[1]}, nil
}

func (p *podStarts) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	var from uint64
	if options != nil {
		var err error
		if from, err = parseRV(options.ResourceVersion); err != nil {
			return nil, err
		}
	}
	initial := options != nil && options.SendInitialEvents != nil && *options.SendInitialEvents
	return p.store.Watch(ctx, from, initial, matcher(ctx, options))
}

// timelineTimeout bounds a get's ask of the node.
const timelineTimeout = 10 * time.Second

// Get returns the pod's latest start with its timeline, read from the
// node for the request's user: the node asks the API server what that
// user may see of it (the argv the kernel saw, other pods' pulls). When
// the node does not answer, the summary alone, and why in an annotation.
func (p *podStarts) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	ps, ok := p.store.Get(ns, name)
	if !ok {
		return nil, apierrors.NewNotFound(podstartapi.SchemeGroupVersion.WithResource(podstartapi.Resource).GroupResource(), name)
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewUnauthorized("no user in the request")
	}
	reader := &apiauth.User{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
	ip, ok := p.ips(ps.Spec.NodeName)
	var err error
	if ok {
		tctx, cancel := context.WithTimeout(ctx, timelineTimeout)
		var body []byte
		body, err = p.nodes.Timeline(tctx, ip, ns, name, ps.Spec.PodUID, reader)
		cancel()
		if err == nil {
			ps.Status.Timeline = &runtime.RawExtension{Raw: body}
			return ps, nil
		}
		if errors.Is(err, apiclient.ErrForbidden) {
			return nil, apierrors.NewForbidden(podstartapi.SchemeGroupVersion.WithResource(podstartapi.Resource).GroupResource(), name, err)
		}
	} else {
		err = errors.New("no daemon answers for the node")
	}
	p.logger.Debug("a node did not give a timeline", "node", ps.Spec.NodeName, "namespace", ns, "pod", name, "error", err)
	if ps.Annotations == nil {
		ps.Annotations = map[string]string{}
	}
	ps.Annotations["readyline.dev/timeline"] = fmt.Sprintf("node %s did not answer: %v", ps.Spec.NodeName, err)
	return ps, nil
}

// The table's columns, as `kubectl get podstarts` prints them (-A adds
// NAMESPACE).
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "the pod's name"},
	{Name: "Node", Type: "string", Description: "the node the pod started on"},
	{Name: "Status", Type: "string", Description: "starting, ready, failed, deleted or timeout"},
	{Name: "Duration", Type: "string", Description: "from the pod's creation to its outcome, or to now"},
	{Name: "Waiting On", Type: "string", Description: "what the start waits on, in the kubelet's words"},
	{Name: "Age", Type: "string", Description: "since the pod's creation"},
	{Name: "Trace", Type: "string", Priority: 1, Description: "the start's trace id"},
}

func (p *podStarts) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	t := &metav1.Table{ColumnDefinitions: columns}
	row := func(ps *podstartapi.PodStart) metav1.TableRow {
		waiting := ps.Status.WaitingOn
		if waiting == "" {
			waiting = ps.Status.Reason
		}
		took := time.Duration(ps.Status.DurationSeconds * float64(time.Second))
		if ps.Status.Outcome == "starting" { // as of now, not of the last poll
			took = time.Since(ps.Status.StartTime.Time)
		}
		return metav1.TableRow{
			Object: runtime.RawExtension{Object: ps},
			Cells: []any{ps.Name, ps.Spec.NodeName, ps.Status.Outcome,
				duration.HumanDuration(took),
				waiting, duration.HumanDuration(time.Since(ps.CreationTimestamp.Time)), ps.Status.TraceID},
		}
	}
	switch o := obj.(type) {
	case *podstartapi.PodStart:
		t.ResourceVersion = o.ResourceVersion
		t.Rows = []metav1.TableRow{row(o)}
	case *podstartapi.PodStartList:
		t.ResourceVersion = o.ResourceVersion
		t.Continue, t.RemainingItemCount = o.Continue, o.RemainingItemCount
		for i := range o.Items {
			t.Rows = append(t.Rows, row(&o.Items[i]))
		}
	default:
		return nil, fmt.Errorf("no table of %T", obj)
	}
	return t, nil
}
