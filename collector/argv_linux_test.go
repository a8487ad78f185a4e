package collector

import (
	"slices"
	"testing"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
)

// TestArgvPolicy: a pod process's argv and the kubelet's ExecSync command
// leave their sources redacted, or with --argv=none as their programs'
// names only.
func TestArgvPolicy(t *testing.T) {
	var execSync *criMethod
	for i := range criMethods {
		if criMethods[i].Method == event.CRIExecSync {
			execSync = &criMethods[i]
		}
	}
	for _, tc := range []struct {
		argv       redact.Policy
		proc, call []string
	}{
		{redact.Redacted, []string{"mysql", "-p" + redact.Marker}, []string{"sh", "-c", "mysqladmin ping -p" + redact.Marker}},
		{redact.ProgramOnly, []string{"mysql"}, []string{"sh"}},
	} {
		t.Run(tc.argv.String(), func(t *testing.T) {
			cg := &cgroupResolver{cache: map[uint64]*cgroupEntry{}, max: 16}
			cg.add(4242, "/kubepods/besteffort/pod"+testPodUID+"/"+testCID)
			procs := &ProcessSource{cfg: ProcessConfig{CNIBinDirs: DefaultCNIBinDirs, Argv: tc.argv}, cgroups: cg, procs: newProcessTable()}
			ev, err := DecodeProcessEvent(execRecord(t, "/usr/bin/mysql", []byte("mysql\x00-phunter2\x00"), 15), testClock)
			if err != nil {
				t.Fatal(err)
			}
			procs.enrich(ev)
			if got := ev.(*event.ProcessExec).Argv; !slices.Equal(got, tc.proc) {
				t.Errorf("process argv %q, want %q", got, tc.proc)
			}

			calls := &KubeletCallSource{cfg: KubeletCallConfig{Argv: tc.argv}, methods: map[uint32]*criMethod{0: execSync}}
			c := calls.toEvent(&GoCallRecord{Str: "cid", Cmd: []string{"sh", "-c", "mysqladmin ping -phunter2"}})
			if got := c.(*event.CRICall).Cmd; !slices.Equal(got, tc.call) {
				t.Errorf("ExecSync command %q, want %q", got, tc.call)
			}
		})
	}
}
