package exporter

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestHelmChartKnowsAlertNames: the Helm chart's values.schema.json accepts
// exactly AlertNames as the keys of config.alerts, so that helm install
// refuses a name the daemon would refuse at start, and takes every one it
// would not.
func TestHelmChartKnowsAlertNames(t *testing.T) {
	b, err := os.ReadFile("../deploy/helm/readyline/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Config struct {
				Properties struct {
					Alerts struct {
						PropertyNames struct {
							Enum []string `json:"enum"`
						} `json:"propertyNames"`
					} `json:"alerts"`
				} `json:"properties"`
			} `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties.Config.Properties.Alerts.PropertyNames.Enum; !slices.Equal(got, AlertNames()) {
		t.Errorf("values.schema.json's config.alerts names %v, the daemon's %v", got, AlertNames())
	}
}
