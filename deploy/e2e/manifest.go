//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// FieldManager is the server-side apply field manager of the tests.
const FieldManager = "readyline-e2e"

// DecodeManifest splits a multi-document YAML or JSON manifest into objects.
func DecodeManifest(manifest []byte) ([]*unstructured.Unstructured, error) {
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decoding manifest: %w", err)
		}
		if len(m) == 0 {
			continue // empty document
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// resource returns the client for obj, setting namespace on namespaced objects
// that have none.
func (e *Env) resource(ctx context.Context, obj *unstructured.Unstructured, namespace string) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		e.Mapper.Reset() // a CRD applied since the last discovery
		mapping, err = e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return e.Dynamic.Resource(mapping.Resource), nil
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(namespace)
	}
	return e.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace()), nil
}

// Apply server-side applies every object of manifest, putting namespaced
// objects without a namespace into namespace. It returns the applied objects.
func (e *Env) Apply(ctx context.Context, namespace string, manifest []byte) ([]*unstructured.Unstructured, error) {
	objs, err := DecodeManifest(manifest)
	if err != nil {
		return nil, err
	}
	return e.ApplyObjects(ctx, namespace, objs)
}

// ApplyObjects is Apply of decoded objects.
func (e *Env) ApplyObjects(ctx context.Context, namespace string, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	applied := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		ri, err := e.resource(ctx, obj, namespace)
		if err != nil {
			return applied, err
		}
		out, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		if err != nil {
			return applied, fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		applied = append(applied, out)
	}
	return applied, nil
}

// ApplyFile applies the manifest in file (see Apply).
func (e *Env) ApplyFile(ctx context.Context, namespace, file string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return e.Apply(ctx, namespace, b)
}

// DeleteAndWait deletes objs (foreground propagation) and waits until none of
// them exists any more. Objects already gone are fine.
func (e *Env) DeleteAndWait(ctx context.Context, timeout time.Duration, objs ...*unstructured.Unstructured) error {
	policy := metav1.DeletePropagationForeground
	for _, obj := range objs {
		ri, err := e.resource(ctx, obj, obj.GetNamespace())
		if err != nil {
			return err
		}
		err = ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, obj := range objs {
			ri, err := e.resource(ctx, obj, obj.GetNamespace())
			if err != nil {
				return false, err
			}
			_, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if err == nil {
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
}

// CreateNamespace creates a namespace named after prefix with a random suffix.
// The default ServiceAccount of a new namespace appears asynchronously; this
// waits for it so that pods can be created right away.
func (e *Env) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	ns, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: map[string]string{"readyline.dev/e2e": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating namespace: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return ns.Name, fmt.Errorf("waiting for the default ServiceAccount in %s: %w", ns.Name, err)
	}
	return ns.Name, nil
}

// TestNamespace creates a namespace named after prefix for test t and
// starts deleting it when the test ends; it fails the test when it cannot.
func (e *Env) TestNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns, err := e.CreateNamespace(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.DeleteNamespace(context.Background(), ns); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	return ns
}

// DeleteNamespace starts deleting namespace without waiting for its pods.
func (e *Env) DeleteNamespace(ctx context.Context, namespace string) error {
	err := e.Client.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
