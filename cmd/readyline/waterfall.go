package main

import (
	"fmt"
	"io"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

// printWaterfall prints one timeline for a terminal, followed by a blank line.
func printWaterfall(w io.Writer, tl *correlator.Timeline, width int) error {
	if err := waterfall.Render(w, tl, width); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}
