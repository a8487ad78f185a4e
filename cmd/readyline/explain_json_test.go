package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiclient"
)

// explainAPI serves the timelines of a golden file as the daemon does.
func explainAPI(t *testing.T) (*httptest.Server, []*correlator.Timeline) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "correlator", "testdata", "golden", "demo-node.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tls []*correlator.Timeline
	if err := json.Unmarshal(b, &tls); err != nil {
		t.Fatal(err)
	}
	store := exporter.NewStore(exporter.StoreLimits{})
	for _, tl := range tls {
		store.Add(tl)
	}
	srv := httptest.NewServer(exporter.ServeEveryPod(store.Handler(nil)))
	t.Cleanup(srv.Close)
	return srv, tls
}

func apiBody(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExplainJSON: `explain --json` prints what the API serves curl
// (indented, as for ?pretty=true), byte for byte, for one pod and for the
// list; a pod the daemon does not keep is still an error, with nothing on
// stdout.
func TestExplainJSON(t *testing.T) {
	srv, tls := explainAPI(t)
	tl := tls[0]
	for _, tc := range []struct {
		name, path string
		args       []string
	}{
		{"pod", "/api/v1/timelines/" + tl.Pod.Namespace + "/" + tl.Pod.Name, []string{tl.Pod.Namespace + "/" + tl.Pod.Name}},
		{"list", "/api/v1/timelines", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--api-addr", srv.URL, "--json"}, tc.args...)
			if err := runExplain(context.Background(), args, &stdout, &stderr); err != nil {
				t.Fatalf("explain %v: %v\n%s", args, err, stderr.String())
			}
			if want := apiBody(t, srv.URL+tc.path+"?pretty=true"); !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("explain --json printed\n%s\nthe API serves\n%s", stdout.Bytes(), want)
			}
		})
	}

	var stdout, stderr bytes.Buffer
	err := runExplain(context.Background(), []string{"--api-addr", srv.URL, "--json", "nowhere/never"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "no recent start of nowhere/never") || stdout.Len() > 0 {
		t.Errorf("a pod the daemon does not keep: err %v, stdout %q; want the not-found error and no output", err, stdout.String())
	}
}

// TestExplainJSONList: the list decodes as the daemon's summaries, every
// stored start in it.
func TestExplainJSONList(t *testing.T) {
	srv, tls := explainAPI(t)
	var stdout bytes.Buffer
	if err := runExplain(context.Background(), []string{"--api-addr", srv.URL, "--json"}, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	var got apiclient.TimelineList
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("explain --json list: %v\n%s", err, stdout.Bytes())
	}
	uids := map[string]bool{} // a start reported partial, then whole, is one
	for _, tl := range tls {
		uids[tl.Pod.UID] = true
	}
	if len(got.Timelines) != len(uids) {
		t.Errorf("%d summaries, want one per pod UID, %d", len(got.Timelines), len(uids))
	}
	for _, s := range got.Timelines {
		if s.UID == "" || s.Namespace == "" || s.Name == "" || s.Start.IsZero() {
			t.Errorf("summary without its pod or start: %+v", s)
		}
	}
}
