package podstartapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API's group, version and resource.
const (
	GroupName = "readyline.dev"
	Version   = "v1alpha1"
	Resource  = "podstarts"
)

// SchemeGroupVersion is the API's group and version; Internal the same
// group at the API machinery's internal version, which the types serve too
// (they need no conversion).
var (
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	Internal           = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}
)

// AddToScheme registers the types at both versions.
func AddToScheme(s *runtime.Scheme) error {
	for _, gv := range []schema.GroupVersion{SchemeGroupVersion, Internal} {
		s.AddKnownTypes(gv, &PodStart{}, &PodStartList{})
	}
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
