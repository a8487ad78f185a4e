package podstartapi

// The OpenAPI definitions the API server needs of the types (and of the
// API machinery's they use), made by kube-openapi's openapi-gen at the
// version go.mod requires: `make generate` (TestOpenAPIIsCurrent checks
// that they name every field).
//go:generate sh -c "go run k8s.io/kube-openapi/cmd/openapi-gen@$(go list -m -f '{{.Version}}' k8s.io/kube-openapi) --output-dir openapi --output-pkg github.com/readyline/readyline/exporter/podstartapi/openapi --output-file zz_generated.openapi.go --go-header-file /dev/null --report-filename /dev/null github.com/readyline/readyline/exporter/podstartapi k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version"
