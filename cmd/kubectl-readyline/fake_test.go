package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiclient"
)

// t0 is when the fixtures' pods were created.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// userPod is a pod of the user's, scheduled to node ("" not yet).
func userPod(namespace, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// daemonPod is a pod of readyline's DaemonSet on node, created at created.
func daemonPod(name, node string, phase corev1.PodPhase, isReady bool, created time.Time) *corev1.Pod {
	status := corev1.ConditionFalse
	if isReady {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: defaultReadylineNamespace, Name: name, CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{"app.kubernetes.io/name": "readyline", "app.kubernetes.io/component": "node-agent"},
		},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{
			Phase:      phase,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		},
	}
}

// userToken is the bearer token of the plugin's user in the tests: the
// fake daemons take it, and no other.
const userToken = "user-token"

// startOf is a start of pod namespace/name (the UID userPod gives it),
// created at start and Ready took later.
func startOf(namespace, name string, start time.Time, took time.Duration) *correlator.Timeline {
	return &correlator.Timeline{
		Pod:   correlator.PodRef{Namespace: namespace, Name: name, UID: "uid-" + name},
		Start: start, End: start.Add(took), Outcome: correlator.OutcomeReady,
	}
}

// namespaceReader may read the starts of pods in its namespaces.
type namespaceReader []string

func (r namespaceReader) MayRead(namespace, name string) error {
	if slices.Contains(r, namespace) {
		return nil
	}
	return fmt.Errorf("%w: User \"someone\" may not get pods in namespace %s", apiclient.ErrForbidden, namespace)
}

// MayExec: as an edit-bound user, exec where it may read.
func (r namespaceReader) MayExec(namespace, name string) error { return r.MayRead(namespace, name) }

// daemonAPI is a readyline's secure API, as apiauth serves it: the starts
// of starts, to whom sends userToken (401 for others), each the starts of
// the namespaces it may read.
func daemonAPI(may []string, starts ...*correlator.Timeline) http.Handler {
	store := exporter.NewStore(exporter.StoreLimits{})
	for _, tl := range starts {
		store.Add(tl)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", store.Handler(nil))
	mux.Handle("/ui/", store.UIHandler(nil))
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+userToken {
			http.Error(w, "unauthenticated: the bearer token is no user's", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r.WithContext(exporter.WithPodReader(r.Context(), namespaceReader(may))))
	})
}

// fakeConn is a daemonConn whose readyline pods serve their secure API
// (by pod name) over TLS on the port the plugin asks for; a pod without
// one is an older readyline: the forward takes a connection, logs that
// it could not connect inside the pod and drops it, as client-go's does.
// refuse, when set, is the error of every forward (RBAC).
type fakeConn struct {
	apis   map[string]http.Handler
	refuse error

	mu       sync.Mutex
	forwards []string // "pod port"
}

func (f *fakeConn) Forward(ctx context.Context, daemon *corev1.Pod, address string, local, remote uint16, ready func(uint16)) error {
	f.mu.Lock()
	f.forwards = append(f.forwards, daemon.Name+" "+strconv.Itoa(int(remote)))
	f.mu.Unlock()
	if f.refuse != nil {
		return f.refuse
	}
	if remote != defaultAPIPort {
		return fmt.Errorf("forwarded to port %d, want %d", remote, defaultAPIPort)
	}
	api, ok := f.apis[daemon.Name]
	if ok {
		srv := httptest.NewTLSServer(api)
		defer srv.Close()
		ready(uint16(srv.Listener.Addr().(*net.TCPAddr).Port))
		<-ctx.Done()
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			klog.FromContext(ctx).Error(fmt.Errorf("error forwarding port %d to pod %s: failed to connect to localhost:%d inside namespace: connection refused",
				remote, daemon.Name, remote), "An error occurred forwarding")
			c.Close()
		}
	}()
	ready(uint16(ln.Addr().(*net.TCPAddr).Port))
	<-ctx.Done()
	return nil
}

// userTransport is the plugin user's credentials: token, over TLS to a
// daemon whose certificate is its own.
func userTransport(token string) http.RoundTripper {
	return transport.NewBearerAuthRoundTripper(token, &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}})
}

// testDaemonSet is a daemonSet over a fake API server holding objs, where
// RBAC allows everything but what forbid lists ("get pods", "create
// pods/portforward": verb and resource, with its subresource), and whose
// user sends userToken to the daemons.
func testDaemonSet(t *testing.T, conn daemonConn, forbid []string, objs ...runtime.Object) *daemonSet {
	t.Helper()
	client := fake.NewClientset(objs...)
	denied := func(verb, resource, sub string) bool {
		if sub != "" {
			resource += "/" + sub
		}
		for _, f := range forbid {
			if f == verb+" "+resource {
				return true
			}
		}
		return false
	}
	client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Resource == "selfsubjectaccessreviews" {
			review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
			attr := review.Spec.ResourceAttributes
			review.Status.Allowed = !denied(attr.Verb, attr.Resource, attr.Subresource)
			return true, review, nil
		}
		if denied(a.GetVerb(), a.GetResource().Resource, a.GetSubresource()) {
			gr := schema.GroupResource{Resource: a.GetResource().Resource}
			return true, nil, apierrors.NewForbidden(gr, "", errors.New(`User "someone" cannot `+a.GetVerb()+` resource "`+gr.Resource+`" in the namespace "`+a.GetNamespace()+`"`))
		}
		return false, nil, nil
	})
	return &daemonSet{client: client, namespace: defaultReadylineNamespace, selector: defaultReadylineSelector, conn: conn,
		apiPort: defaultAPIPort, transport: userTransport(userToken)}
}

// wantErr fails unless err is an error whose message has every one of want.
func wantErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
