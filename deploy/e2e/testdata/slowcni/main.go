// Command slowcni is a CNI plugin for the end-to-end tests that only waits:
// chained last in a conflist, it sleeps for the "sleep" of its network
// configuration on ADD (default 5s), then passes the previous plugin's
// result through, as the CNI spec asks of a chained plugin that changes
// nothing. DEL, CHECK, GC and STATUS succeed at once; VERSION reports the
// versions it passes results through for.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

type netConf struct {
	CNIVersion string          `json:"cniVersion"`
	Sleep      string          `json:"sleep"`
	PrevResult json.RawMessage `json:"prevResult"`
}

func main() {
	if err := run(os.Getenv("CNI_COMMAND"), os.Stdin, os.Stdout); err != nil {
		// The CNI error format, on stdout, with a non-zero exit.
		json.NewEncoder(os.Stdout).Encode(map[string]any{"cniVersion": "1.0.0", "code": 999, "msg": err.Error()})
		os.Exit(1)
	}
}

func run(cmd string, stdin io.Reader, stdout io.Writer) error {
	if cmd == "VERSION" {
		_, err := fmt.Fprintln(stdout, `{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}`)
		return err
	}
	var conf netConf
	if err := json.NewDecoder(stdin).Decode(&conf); err != nil {
		return fmt.Errorf("reading the network configuration: %w", err)
	}
	if cmd != "ADD" {
		return nil
	}
	d := 5 * time.Second
	if conf.Sleep != "" {
		var err error
		if d, err = time.ParseDuration(conf.Sleep); err != nil {
			return fmt.Errorf("sleep: %w", err)
		}
	}
	time.Sleep(d)
	if len(conf.PrevResult) == 0 {
		return fmt.Errorf("no prevResult: chain slowcni after a plugin that sets up the network")
	}
	_, err := stdout.Write(conf.PrevResult)
	return err
}
