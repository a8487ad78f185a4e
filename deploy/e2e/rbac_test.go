//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// access is one request, as a SubjectAccessReview asks about it.
type access struct {
	group, resource, subresource, verb, namespace, name string
}

func (a access) String() string {
	res := a.resource
	if a.subresource != "" {
		res += "/" + a.subresource
	}
	if a.group != "" {
		res += "." + a.group
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %s in %q", a.verb, res, a.name, a.namespace))
}

// probedResource is a resource near what a shipped role grants, whose
// every verb the RBAC tests ask about.
type probedResource struct {
	group, resource, subresource string
	namespaced                   bool
	// names are the objects the verbs on one object are asked for ("x":
	// any one).
	names []string
}

// rbacVerbs are the verbs asked about.
var rbacVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// accessesOf are the requests the RBAC tests ask about: every verb on each
// resource, namespaced ones in each of namespaces and (list, watch) in all
// at once, the verbs on one object for each name.
func accessesOf(resources []probedResource, namespaces []string) []access {
	var out []access
	for _, r := range resources {
		for _, verb := range rbacVerbs {
			names := []string{""}
			switch verb {
			case "get", "update", "patch", "delete":
				names = r.names
				if len(names) == 0 {
					names = []string{"x"}
				}
			}
			nss := []string{""}
			if r.namespaced {
				nss = namespaces
				if verb == "list" || verb == "watch" {
					nss = append(nss[:len(nss):len(nss)], "")
				}
			}
			for _, ns := range nss {
				for _, name := range names {
					out = append(out, access{r.group, r.resource, r.subresource, verb, ns, name})
				}
			}
		}
	}
	return out
}

// checkAccess asks the API server, with a SubjectAccessReview for each
// access (they evaluate the same RBAC rules as requests), whether user in
// groups may: exactly those allowed says. It returns how many it asked.
func checkAccess(t *testing.T, ctx context.Context, user string, groups []string, accesses []access, allowed func(access) bool) int {
	t.Helper()
	for _, a := range accesses {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: a.group, Verb: a.verb, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
			},
		}}
		out, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := allowed(a); out.Status.Allowed != want {
			t.Errorf("%s may %s: allowed=%v, want %v (%s)", user, a, out.Status.Allowed, want, out.Status.Reason)
		}
	}
	return len(accesses)
}

// checkReadylineRBAC asks the API server what the daemon's ServiceAccount
// may do, verb by verb on every resource near what it uses: exactly what
// deploy/base/rbac.yaml lists, and nothing else, get and patch of pods and
// watch of events included: pods list and watch (the pod watch), core
// events list (one pod's Events, by a field selector, when its start needs
// them) and create (the alerts), tokenreviews and subjectaccessreviews
// create (the secure API),
// and the client CA ConfigMap of kube-system, as the built-in
// extension-apiserver-authentication-reader Role grants it (get, list and
// watch of that one ConfigMap).
func checkReadylineRBAC(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	const clientCA = "extension-apiserver-authentication"
	allowed := func(a access) bool {
		switch {
		case a.group == "" && a.resource == "pods" && a.subresource == "" && (a.verb == "list" || a.verb == "watch"),
			a.group == "" && a.resource == "events" && (a.verb == "list" || a.verb == "create"),
			a.group == "authentication.k8s.io" && a.resource == "tokenreviews" && a.verb == "create",
			a.group == "authorization.k8s.io" && a.resource == "subjectaccessreviews" && a.verb == "create":
			return true
		case a.group == "" && a.resource == "configmaps" && a.namespace == "kube-system" && a.name == clientCA:
			return a.verb == "get" || a.verb == "list" || a.verb == "watch"
		}
		return false
	}
	resources := []probedResource{
		{resource: "pods", namespaced: true},
		{resource: "pods", subresource: "status", namespaced: true},
		{resource: "pods", subresource: "exec", namespaced: true},
		{resource: "pods", subresource: "portforward", namespaced: true},
		{resource: "pods", subresource: "log", namespaced: true},
		{resource: "pods", subresource: "eviction", namespaced: true},
		{resource: "events", namespaced: true},
		{group: "events.k8s.io", resource: "events", namespaced: true},
		{resource: "nodes", names: []string{env.NodeName}},
		{resource: "nodes", subresource: "status", names: []string{env.NodeName}},
		{resource: "nodes", subresource: "proxy", names: []string{env.NodeName}},
		{resource: "secrets", namespaced: true},
		{resource: "configmaps", namespaced: true, names: []string{"x", clientCA}},
		{resource: "serviceaccounts", subresource: "token", namespaced: true},
		{group: "authentication.k8s.io", resource: "tokenreviews"},
		{group: "authorization.k8s.io", resource: "subjectaccessreviews"},
		{group: "authorization.k8s.io", resource: "localsubjectaccessreviews", namespaced: true},
		{group: "rbac.authorization.k8s.io", resource: "rolebindings", namespaced: true},
		{group: "certificates.k8s.io", resource: "certificatesigningrequests"},
	}
	// The client CA's name in list and watch: a field selector on it.
	accesses := accessesOf(resources, []string{"kube-system", ReadylineNamespace})
	for _, verb := range []string{"list", "watch"} {
		accesses = append(accesses, access{resource: "configmaps", verb: verb, namespace: "kube-system", name: clientCA})
	}
	n := checkAccess(t, ctx, ReadylineServiceAccount,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + ReadylineNamespace, "system:authenticated"}, accesses, allowed)
	t.Logf("%d access reviews of %s: only what deploy/base/rbac.yaml lists allowed", n, ReadylineServiceAccount)
}
