package exporter

import (
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/readyline/readyline/correlator"
)

// TestTraceHoldsNoSecrets: a Timeline whose postStart hook runs curl -u
// admin:hunter2 and whose container runs mysqladmin with the root password
// (as a Timeline replayed from an old recording may hold them) is exported
// with neither secret in any span name, attribute or event, and with the
// rest of the commands kept.
func TestTraceHoldsNoSecrets(t *testing.T) {
	tl := postStartDemo()
	a := &tl.Containers[0].Attempts[0]
	a.Process.Argv = []string{"sh", "-c", "mysqladmin ping -h 127.0.0.1 -u root -ps3cr3t-root"}
	a.PostStart.Command = []string{"sh", "-c", "curl -u admin:hunter2 http://x/"}
	spans, _ := exportToMemory(t, TraceConfig{NodeName: "node"}, tl)
	st := newSpanTree(t, spans)
	main := st.child(st.root, "container main")
	hook := attrMap(st.child(main, "postStart").Attributes)[AttrHookCommand].AsStringSlice()
	if want := []string{"sh", "-c", "curl -u admin:<redacted> http://x/"}; !slices.Equal(hook, want) {
		t.Errorf("hook command %q, want %q", hook, want)
	}
	for _, s := range spans {
		for _, text := range spanTexts(s) {
			for _, secret := range []string{"hunter2", "s3cr3t-root"} {
				if strings.Contains(text, secret) {
					t.Errorf("span %q holds %q: %s", s.Name, secret, text)
				}
			}
			if strings.Contains(text, "mysqladmin ping") && !strings.Contains(text, "-u root -p<redacted>") {
				t.Errorf("span %q: the process's command lost more than its secret: %s", s.Name, text)
			}
		}
	}
	if !correlatorArgvUnchanged(tl) {
		t.Error("exporting modified the Timeline")
	}
}

// spanTexts returns every text of a span: its name, its attributes' and
// its events' values (a string slice joined with spaces), its events'
// names.
func spanTexts(s tracetest.SpanStub) []string {
	texts := []string{s.Name}
	add := func(kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			if kv.Value.Type() == attribute.STRINGSLICE {
				texts = append(texts, strings.Join(kv.Value.AsStringSlice(), " "))
			} else {
				texts = append(texts, kv.Value.Emit())
			}
		}
	}
	add(s.Attributes)
	for _, ev := range s.Events {
		texts = append(texts, ev.Name)
		add(ev.Attributes)
	}
	return texts
}

func correlatorArgvUnchanged(tl *correlator.Timeline) bool {
	return strings.HasSuffix(tl.Containers[0].Attempts[0].PostStart.Command[2], "admin:hunter2 http://x/")
}
