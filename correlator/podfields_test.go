package correlator

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/collector/event"
)

// readOnlyToMove are the pod fields the correlator touches only to move
// their times onto its clock (clock.go basePod), never to decide: the strip
// may drop them.
var readOnlyToMove = map[string]bool{
	"k8s.io/api/core/v1.PodCondition.LastProbeTime":           true,
	"k8s.io/api/core/v1.PodStatus.EphemeralContainerStatuses": true,
}

// TestStripPodKeepsWhatTheCorrelatorReads type-checks the correlator's own
// source and fails for every field of a pod it reads that event.StripPod
// drops: a rule that starts reading a pod field must have the strip keep it
// (the golden recordings only show the fields they exercise).
func TestStripPodKeepsWhatTheCorrelatorReads(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the package (go list -export)")
	}
	read := podFieldsRead(t)
	if len(read) < 50 {
		t.Fatalf("found only %d pod fields read: %v", len(read), read)
	}
	pod := &corev1.Pod{}
	fill(reflect.ValueOf(pod).Elem(), 0)
	pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "h", configHashAnnotation: "h", TraceParentAnnotation: "t"}
	kept := map[string]bool{}
	nonZeroFields(reflect.ValueOf(event.StripPod(pod)), kept)
	reachable := map[reflect.Type]bool{}
	structTypes(reflect.TypeFor[corev1.Pod](), reachable)
	names := map[string]bool{}
	for typ := range reachable {
		names[typ.PkgPath()+"."+typ.Name()] = true
	}
	var dropped []string
	for _, f := range read {
		owner := f[:strings.LastIndex(f, ".")]
		if names[owner] && !kept[f] && !readOnlyToMove[f] {
			dropped = append(dropped, f)
		}
	}
	if len(dropped) > 0 {
		t.Errorf("the correlator reads pod fields that event.StripPod drops (keep them there):\n%s", strings.Join(dropped, "\n"))
	}
}

// podFieldsRead lists the fields of the Kubernetes API types that the
// correlator's non-test source selects, as "pkgpath.Type.Field" of the
// struct that declares each (a field promoted through an embedded struct
// is named by that struct).
func podFieldsRead(t *testing.T) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to read the packages' export data:", err)
	}
	out, err := exec.Command(goTool, "list", "-export", "-deps", "-json=ImportPath,Export", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var syntax []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		syntax = append(syntax, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	if _, err := conf.Check("github.com/readyline/readyline/correlator", fset, syntax, info); err != nil {
		t.Fatalf("type-checking the correlator: %v", err)
	}
	seen := map[string]bool{}
	for _, sel := range info.Selections {
		if sel.Kind() != types.FieldVal {
			continue
		}
		owner := sel.Recv()
		for _, i := range sel.Index()[:len(sel.Index())-1] { // through embedded structs
			owner = deref(owner).Underlying().(*types.Struct).Field(i).Type()
		}
		named, ok := deref(owner).(*types.Named)
		if !ok || named.Obj().Pkg() == nil {
			continue
		}
		if path := named.Obj().Pkg().Path(); path == "k8s.io/api/core/v1" || path == "k8s.io/apimachinery/pkg/apis/meta/v1" {
			seen[path+"."+named.Obj().Name()+"."+sel.Obj().Name()] = true
		}
	}
	list := make([]string, 0, len(seen))
	for f := range seen {
		list = append(list, f)
	}
	sort.Strings(list)
	return list
}

func deref(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

var metaTimeType = reflect.TypeFor[metav1.Time]()

// fill sets every exported field reachable from v to a non-zero value:
// one element per slice and map.
func fill(v reflect.Value, depth int) {
	if depth > 32 || !v.CanSet() {
		return
	}
	switch {
	case v.Type() == timeType: // clock.go's
		v.Set(reflect.ValueOf(time.Unix(1e9, 0)))
		return
	case v.Type() == metaTimeType:
		v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(1e9, 0))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth+1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}

// nonZeroFields adds to kept "pkgpath.Type.Field" for each exported struct
// field reachable from v that is not zero.
func nonZeroFields(v reflect.Value, kept map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			nonZeroFields(v.Elem(), kept)
		}
	case reflect.Slice:
		for i := range v.Len() {
			nonZeroFields(v.Index(i), kept)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			nonZeroFields(it.Value(), kept)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && !v.Field(i).IsZero() {
				kept[v.Type().PkgPath()+"."+v.Type().Name()+"."+f.Name] = true
				nonZeroFields(v.Field(i), kept)
			}
		}
	}
}

// structTypes adds the named struct types reachable from t to seen.
func structTypes(t reflect.Type, seen map[reflect.Type]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		structTypes(t.Elem(), seen)
	case reflect.Map:
		structTypes(t.Key(), seen)
		structTypes(t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				structTypes(t.Field(i).Type, seen)
			}
		}
	}
}
