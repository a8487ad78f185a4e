package main

import (
	"context"
	"errors"
	"io"
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
	utilexec "k8s.io/client-go/util/exec"
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

// explainCall is one `readyline explain` the fake ran.
type explainCall struct {
	daemon string
	args   []string
}

// fakeConn is a daemonConn whose daemons answer with answer (nil: print
// nothing and succeed) and forward with forward.
type fakeConn struct {
	answer  func(daemon *corev1.Pod, args []string, stdout, stderr io.Writer) error
	forward func(ctx context.Context, daemon *corev1.Pod, address string, local, remote uint16, ready func(uint16)) error

	mu    sync.Mutex
	calls []explainCall
}

func (f *fakeConn) Explain(ctx context.Context, daemon *corev1.Pod, args []string, stdout, stderr io.Writer) error {
	f.mu.Lock()
	f.calls = append(f.calls, explainCall{daemon.Name, append([]string(nil), args...)})
	f.mu.Unlock()
	if f.answer == nil {
		return nil
	}
	return f.answer(daemon, args, stdout, stderr)
}

func (f *fakeConn) Forward(ctx context.Context, daemon *corev1.Pod, address string, local, remote uint16, ready func(uint16)) error {
	return f.forward(ctx, daemon, address, local, remote, ready)
}

// exitError is what an exec whose command exited with code returns.
func exitError(code int) error {
	return utilexec.CodeExitError{Err: errors.New("command terminated with non-zero exit code"), Code: code}
}

// testDaemonSet is a daemonSet over a fake API server holding objs, where
// RBAC allows everything but what forbid lists ("get pods", "create
// pods/exec": verb and resource, with its subresource).
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
	return &daemonSet{client: client, namespace: defaultReadylineNamespace, selector: defaultReadylineSelector, conn: conn}
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
