//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The Prometheus Operator's API (deploy/alerts' PrometheusRule and
// PodMonitor) and the generator its CRDs are made with upstream. The
// operator's own module, which holds the CRD files, is not on the module
// proxy; its API types module is.
const (
	PrometheusOperatorAPI        = "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring"
	PrometheusOperatorAPIVersion = "v0.95.2"
	ControllerToolsVersion       = "v0.23.0"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// MonitoringCRDs generates the monitoring.coreos.com CRDs the way the
// Prometheus Operator does (controller-gen over its API types), in a
// scratch module under dir, and returns the files by CRD name
// (e.g. "prometheusrules.monitoring.coreos.com").
func MonitoringCRDs(ctx context.Context, dir string) (map[string]string, error) {
	gen := `package crdgen

import _ "` + PrometheusOperatorAPI + `/v1"
`
	if err := os.WriteFile(filepath.Join(dir, "gen.go"), []byte(gen), 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "crds")
	for _, args := range [][]string{
		{"mod", "init", "crdgen"},
		{"get", PrometheusOperatorAPI + "@" + PrometheusOperatorAPIVersion},
		{"mod", "tidy"},
		{"run", "sigs.k8s.io/controller-tools/cmd/controller-gen@" + ControllerToolsVersion,
			"crd:crdVersions=v1", "paths=" + PrometheusOperatorAPI + "/v1", "output:crd:dir=" + out},
	} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go %v: %w\n%s", args, err, b)
		}
	}
	files, err := filepath.Glob(filepath.Join(out, "monitoring.coreos.com_*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("controller-gen wrote no CRDs to %s", out)
	}
	crds := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := DecodeManifest(b)
		if err != nil || len(objs) != 1 {
			return nil, fmt.Errorf("%s: %d objects, %v", f, len(objs), err)
		}
		crds[objs[0].GetName()] = string(b)
	}
	return crds, nil
}

// EnsureCRD creates the CRD in manifest unless one of its name exists, and
// waits until it is Established. It returns whether it created it (then
// the caller deletes it when done, with DeleteCRD).
func (e *Env) EnsureCRD(ctx context.Context, manifest string) (bool, error) {
	objs, err := DecodeManifest([]byte(manifest))
	if err != nil || len(objs) != 1 {
		return false, fmt.Errorf("want one CRD: %d objects, %v", len(objs), err)
	}
	crd := objs[0]
	crds := e.Dynamic.Resource(crdGVR)
	if _, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{}); err == nil {
		return false, nil
	} else if !apierrors.IsNotFound(err) {
		return false, err
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
		return false, fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return true, fmt.Errorf("CRD %s not Established: %w", crd.GetName(), err)
	}
	e.Mapper.Reset()
	return true, nil
}

// DeleteCRD deletes the CRD name (and every object of its kind).
func (e *Env) DeleteCRD(ctx context.Context, name string) error {
	err := e.Dynamic.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
