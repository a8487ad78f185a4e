package podstartapi

import (
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API's group, version, resource and its subresource.
const (
	GroupName = "readyline.dev"
	Version   = "v1alpha1"
	Resource  = "podstarts"
	// Web is podstarts/NAME/web/PATH, the daemon's pages (PodStartWebOptions).
	Web = "web"
)

// SchemeGroupVersion is the API's group and version; Internal the same
// group at the API machinery's internal version, which the types serve too
// (they need no conversion).
var (
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	Internal           = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}
)

// AddToScheme registers the types at both versions, and how the web
// subresource's options are read from a request's query (where the API
// server puts its path).
func AddToScheme(s *runtime.Scheme) error {
	for _, gv := range []schema.GroupVersion{SchemeGroupVersion, Internal} {
		s.AddKnownTypes(gv, &PodStart{}, &PodStartList{}, &PodStartWebOptions{})
	}
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return s.AddConversionFunc((*url.Values)(nil), (*PodStartWebOptions)(nil), func(a, b any, _ conversion.Scope) error {
		b.(*PodStartWebOptions).Path = a.(*url.Values).Get("path")
		return nil
	})
}
