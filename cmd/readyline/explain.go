package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
	"github.com/readyline/readyline/exporter/termtext"
	"github.com/readyline/readyline/exporter/waterfall"
)

// explainConfig is the validated configuration of `readyline explain`.
type explainConfig struct {
	apiAddr   string
	width     uint
	json      bool
	namespace string
	name      string // empty: list the pod starts the daemon keeps
	uid       string // not empty: only that pod's start
	watch     bool
}

func parseExplainConfig(args []string, stderr io.Writer) (explainConfig, error) {
	var c explainConfig
	fs := newFlagSet("readyline explain", stderr)
	fs.String(&c.apiAddr, "api-addr", defaultAPIAddr, "the daemon's timeline API (readyline run --api-addr): unix:PATH, host:port or a URL")
	fs.Uint(&c.width, "width", 100, "width of the waterfall in columns")
	fs.String(&c.uid, "uid", "", "only the start of the pod with this UID (not an earlier pod of the same name)")
	fs.Bool(&c.json, "json", false, "print the timeline (or the list) as JSON, as the daemon's API serves it")
	fs.Bool(&c.watch, "watch", false, "for a start in progress: draw it again each time it takes a new fact (at least every 10 s), until it ends")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: readyline explain [flags] [NAMESPACE/]POD\n\nPrints the waterfall of a recent pod start on this node, from the running daemon.\nWithout a pod, lists the pod starts the daemon keeps.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, errUsage
	}
	switch fs.NArg() {
	case 0:
	case 1:
		c.namespace, c.name = "default", fs.Arg(0)
		if ns, name, ok := strings.Cut(fs.Arg(0), "/"); ok {
			c.namespace, c.name = ns, name
		}
		if c.namespace == "" || c.name == "" {
			fs.Usage()
			return c, errUsage
		}
	default:
		fs.Usage()
		return c, errUsage
	}
	if c.watch && c.name == "" {
		fmt.Fprintln(fs.Output(), "--watch follows one pod's start: name the pod")
		return c, errUsage
	}
	return c, nil
}

// runExplain prints one pod start's waterfall, or the list of pod starts.
func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseExplainConfig(args, stderr)
	if err != nil {
		return err
	}
	api := localAPIClient(cfg.apiAddr)
	if cfg.watch {
		return watchStart(ctx, cfg, api, stdout)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if cfg.name == "" {
		list, err := api.Timelines(ctx, "")
		if err != nil {
			return fmt.Errorf("asking the daemon at %s: %w", cfg.apiAddr, err)
		}
		if cfg.json {
			return writeIndentedJSON(stdout, apiclient.TimelineList{Timelines: list}) // as the daemon writes it for curl: kubectl-readyline reads it
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POD\tOUTCOME\tDURATION\tCREATED")
		for _, s := range list {
			d := secondsDuration(s.DurationSeconds).Round(time.Millisecond)
			// Names come from the API and the pods, and a tab would shift the columns too.
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termtext.Escape(s.Namespace+"/"+s.Name), termtext.Escape(string(s.Outcome)),
				d, s.Start.Local().Format(time.DateTime))
		}
		return tw.Flush()
	}
	tl, err := fetchStart(ctx, cfg, api)
	if err != nil {
		return err
	}
	if cfg.json {
		return writeIndentedJSON(stdout, tl)
	}
	return printWaterfall(stdout, tl, int(cfg.width))
}

// fetchStart asks the daemon for the pod's start, in progress or kept.
func fetchStart(ctx context.Context, cfg explainConfig, api *apiclient.Client) (*correlator.Timeline, error) {
	tl, err := api.Timeline(ctx, cfg.namespace, cfg.name, cfg.uid)
	if errors.Is(err, apiclient.ErrNotFound) {
		which := cfg.namespace + "/" + cfg.name
		if cfg.uid != "" {
			which += " (uid " + cfg.uid + ")"
		}
		return nil, fmt.Errorf("no recent start of %s on this node (none in progress, and the daemon keeps the last --keep pod starts that ended; 'readyline explain' lists them)", which)
	}
	if err != nil {
		return nil, fmt.Errorf("asking the daemon at %s: %w", cfg.apiAddr, err)
	}
	return tl, nil
}

// watchStart draws the pod's start, and again each time it took new facts,
// until it ends or ctx does (waterfall.Watch).
func watchStart(ctx context.Context, cfg explainConfig, api *apiclient.Client, stdout io.Writer) error {
	return waterfall.Watch(ctx, func(ctx context.Context) (*correlator.Timeline, error) { return fetchStart(ctx, cfg, api) },
		func(tl *correlator.Timeline, again bool) error {
			if again {
				if err := waterfall.Redraw(stdout); err != nil {
					return err
				}
			}
			if cfg.json {
				return writeIndentedJSON(stdout, tl)
			}
			return printWaterfall(stdout, tl, int(cfg.width))
		})
}

// localAPIClient is the client of the daemon's local API at addr (see
// readyline run --api-addr): a unix socket (unix:PATH), a host:port or a
// URL.
func localAPIClient(addr string) *apiclient.Client {
	path, ok := unixPath(addr)
	if !ok {
		if !strings.Contains(addr, "://") {
			addr = "http://" + addr
		}
		return &apiclient.Client{BaseURL: addr}
	}
	return &apiclient.Client{BaseURL: "http://readyline", HTTP: &http.Client{Transport: unixTransport(path)}}
}

// writeIndentedJSON writes v as the daemon's API does.
func writeIndentedJSON(w io.Writer, v any) error { return termtext.WriteJSON(w, v, "  ") }

// secondsDuration converts seconds to a Duration, saturating where the
// conversion would overflow (a float64 out of int64's range converts to
// anything).
func secondsDuration(s float64) time.Duration {
	const limit = float64(math.MaxInt64) / float64(time.Second)
	switch {
	case math.IsNaN(s):
		return 0
	case s >= limit:
		return math.MaxInt64
	case s <= -limit:
		return math.MinInt64
	}
	return time.Duration(s * float64(time.Second))
}
