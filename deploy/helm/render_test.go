// Package chart_test checks the Helm chart in readyline/ with the Helm
// library: what `helm lint` and `helm template` do, and that the chart
// renders, object by object, what the kustomizations under deploy/ build.
package chart_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart; deployDir holds the kustomizations it must equal.
const (
	chartDir  = "readyline"
	deployDir = ".."
)

// object is one Kubernetes object as JSON decodes it.
type object = map[string]any

// key names an object: kind, namespace, name.
func key(o object) string {
	md, _ := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return fmt.Sprintf("%v %s/%s", o["kind"], ns, name)
}

// release is what rendering the chart gives: its objects by key, in the
// order of the manifest, and its NOTES.txt.
type release struct {
	objects map[string]object
	order   []string
	notes   string
}

// loadChart loads the chart from its directory, anew for each use: an
// action may change the chart it is given.
func loadChart(t *testing.T) *chartv2.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return c
}

// render is `helm template NAME readyline/ -n NAMESPACE` with values over the
// chart's: the Install action in client-only dry run, as the helm binary does
// it. An error (a template's or the schema's) is returned.
func render(t *testing.T, name, namespace string, values map[string]any) (*release, error) {
	t.Helper()
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
	install := action.NewInstall(cfg)
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = name
	install.Namespace = namespace
	install.Replace = true // no release store to ask
	if values == nil {
		values = map[string]any{}
	}
	r, err := install.RunWithContext(context.Background(), loadChart(t), values)
	if err != nil {
		return nil, err
	}
	rel, ok := r.(*releasev1.Release)
	if !ok {
		return nil, fmt.Errorf("a release of type %T", r)
	}
	objs, order, err := decodeManifest([]byte(rel.Manifest))
	if err != nil {
		return nil, fmt.Errorf("the rendered manifest: %w\n%s", err, rel.Manifest)
	}
	return &release{objects: objs, order: order, notes: rel.Info.Notes}, nil
}

// mustRender is render of release readyline in namespace readyline, failing
// the test on an error.
func mustRender(t *testing.T, values map[string]any) *release {
	t.Helper()
	r, err := render(t, "readyline", "readyline", values)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// kustomize is `kubectl kustomize dir` with kustomize's library.
func kustomize(t *testing.T, dir string) map[string]object {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	b, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, _, err := decodeManifest(b)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	return objs
}

// decodeManifest splits a multi-document YAML stream into objects, as JSON
// decodes them (numbers are float64 on both sides of a comparison).
func decodeManifest(b []byte) (map[string]object, []string, error) {
	objs := map[string]object{}
	var order []string
	for _, doc := range splitYAML(b) {
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			return nil, nil, err
		}
		if len(o) == 0 {
			continue
		}
		k := key(o)
		if _, dup := objs[k]; dup {
			return nil, nil, fmt.Errorf("%s twice", k)
		}
		objs[k] = o
		order = append(order, k)
	}
	return objs, order, nil
}

// splitYAML splits a YAML stream at its document separators.
func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	for line := range bytes.Lines(b) {
		if l := bytes.TrimRight(line, " \r\n"); bytes.Equal(l, []byte("---")) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	return append(docs, cur.Bytes())
}

// helmLabels are the labels every object of the chart carries and the
// kustomizations' do not, with the values they must have for the chart at
// its defaults: Helm's standard labels, the one difference allowed on an
// object (the chart's README lists it).
func helmLabels(t *testing.T, release string) map[string]string {
	c := loadChart(t)
	return map[string]string{
		"helm.sh/chart":                c.Metadata.Name + "-" + strings.ReplaceAll(c.Metadata.Version, "+", "_"),
		"app.kubernetes.io/instance":   release,
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/version":    c.Metadata.AppVersion,
	}
}

// withoutHelmLabels returns a copy of o without Helm's standard labels, and
// an error when one of them is missing or has another value than want.
func withoutHelmLabels(o object, want map[string]string) (object, error) {
	o = deepCopy(o)
	md, _ := o["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if labels[k] != want[k] {
			errs = append(errs, fmt.Errorf("label %s=%v, want %q", k, labels[k], want[k]))
		}
		delete(labels, k)
	}
	if len(labels) == 0 {
		delete(md, "labels")
	}
	return o, errors.Join(errs...)
}

func deepCopy(o object) object {
	b, err := yaml.Marshal(o)
	if err != nil {
		panic(err)
	}
	var c object
	if err := yaml.Unmarshal(b, &c); err != nil {
		panic(err)
	}
	return c
}

// dig returns the value at path in o (map keys, or list indexes as ints).
func dig(o any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := o.(map[string]any)
			if !ok {
				return nil
			}
			o = m[k]
		case int:
			l, ok := o.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			o = l[k]
		}
	}
	return o
}

// repoPath is a path of the repository, relative to this package.
func repoPath(elem ...string) string {
	return filepath.Join(append([]string{"..", ".."}, elem...)...)
}
