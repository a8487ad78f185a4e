package event

import "testing"

func TestCRIMethodShort(t *testing.T) {
	for m, want := range map[CRIMethod]string{
		CRIRunPodSandbox: "RunPodSandbox",
		CRIExecSync:      "ExecSync",
		CRIPullImage:     "PullImage",
		"runtime.v1alpha2.RuntimeService/Version": "Version",
		"nonsense": "",
	} {
		if got := m.Short(); got != want {
			t.Errorf("%q.Short() = %q, want %q", m, got, want)
		}
	}
}
