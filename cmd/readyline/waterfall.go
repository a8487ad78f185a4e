package main

import (
	"encoding/json"
	"io"

	"github.com/readyline/readyline/correlator"
)

// printWaterfall prints one timeline for a terminal.
func printWaterfall(w io.Writer, tl *correlator.Timeline, width int) error {
	b, err := json.MarshalIndent(tl, "", "  ") // until the exporter's renderer lands
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
