package podstartapi_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/readyline/readyline/exporter/podstartapi"
	"github.com/readyline/readyline/exporter/podstartapi/openapi"
)

// TestOpenAPIIsCurrent: the generated definitions name every JSON field
// of the types: a field added without `make generate` fails here.
func TestOpenAPIIsCurrent(t *testing.T) {
	defs := openapi.GetOpenAPIDefinitions(func(path string) spec.Ref { return spec.MustCreateRef(path) })
	for _, v := range []any{podstartapi.PodStart{}, podstartapi.PodStartSpec{}, podstartapi.PodStartStatus{}, podstartapi.PodStartList{}, podstartapi.PodStartWebOptions{}} {
		typ := reflect.TypeOf(v)
		def, ok := defs[typ.PkgPath()+"."+typ.Name()]
		if !ok {
			t.Errorf("no OpenAPI definition of %s: run make generate", typ.Name())
			continue
		}
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" {
				continue // inline
			}
			if _, ok := def.Schema.Properties[name]; !ok {
				t.Errorf("%s.%s: not in the OpenAPI definition: run make generate", typ.Name(), name)
			}
		}
	}
}

// TestDeepCopy: a copy shares nothing with its original.
func TestDeepCopy(t *testing.T) {
	orig := &podstartapi.PodStartList{Items: []podstartapi.PodStart{{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"a": "b"}},
		Spec:       podstartapi.PodStartSpec{NodeName: "n1"},
		Status: podstartapi.PodStartStatus{Outcome: "ready", StartTime: metav1.NewTime(time.Unix(1, 0)), EndTime: &metav1.Time{Time: time.Unix(2, 0)},
			Timeline: &runtime.RawExtension{Raw: []byte(`{"x":1}`)}},
	}}}
	cp := orig.DeepCopyObject().(*podstartapi.PodStartList)
	if !reflect.DeepEqual(orig, cp) {
		t.Fatalf("copy differs: %+v", cp)
	}
	cp.Items[0].Annotations["a"] = "changed"
	cp.Items[0].Status.Timeline.Raw[2] = 'y'
	cp.Items[0].Status.Outcome = "failed"
	cp.Items[0].Status.EndTime.Time = time.Unix(3, 0)
	if orig.Items[0].Annotations["a"] != "b" || string(orig.Items[0].Status.Timeline.Raw) != `{"x":1}` || orig.Items[0].Status.Outcome != "ready" ||
		orig.Items[0].Status.EndTime.Unix() != 2 {
		t.Fatalf("changing the copy changed the original: %+v", orig.Items[0])
	}
}
