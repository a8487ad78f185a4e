package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// errUsage marks an error already explained to the user with the usage.
var errUsage = errors.New("usage error")

// flagSet is a flag.FlagSet whose flags default to their environment twins:
// --ring-buffer-size reads READYLINE_RING_BUFFER_SIZE.
type flagSet struct {
	*flag.FlagSet
	envErrs []error
}

func newFlagSet(name string, stderr io.Writer) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &flagSet{FlagSet: fs}
}

// envName is the environment twin of a flag.
func envName(flagName string) string {
	return "READYLINE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func (fs *flagSet) env(name string) (string, bool) {
	return os.LookupEnv(envName(name))
}

func (fs *flagSet) String(p *string, name, def, help string) {
	if v, ok := fs.env(name); ok {
		def = v
	}
	fs.StringVar(p, name, def, help+" ($"+envName(name)+")")
}

func (fs *flagSet) Bool(p *bool, name string, def bool, help string) {
	if v, ok := fs.env(name); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fs.envErrs = append(fs.envErrs, fmt.Errorf("$%s: %w", envName(name), err))
		}
		def = b
	}
	fs.BoolVar(p, name, def, help+" ($"+envName(name)+")")
}

func (fs *flagSet) Uint(p *uint, name string, def uint, help string) {
	if v, ok := fs.env(name); ok {
		n, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			fs.envErrs = append(fs.envErrs, fmt.Errorf("$%s: %w", envName(name), err))
		}
		def = uint(n)
	}
	fs.UintVar(p, name, def, help+" ($"+envName(name)+")")
}

func (fs *flagSet) Duration(p *time.Duration, name string, def time.Duration, help string) {
	if v, ok := fs.env(name); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			fs.envErrs = append(fs.envErrs, fmt.Errorf("$%s: %w", envName(name), err))
		}
		def = d
	}
	fs.DurationVar(p, name, def, help+" ($"+envName(name)+")")
}

// Bytes registers a size flag: a number of bytes, or a Kubernetes quantity
// such as 32Mi or 64M.
func (fs *flagSet) Bytes(p *int64, name string, def int64, help string) {
	bytesVar(fs, p, name, def, help)
}

// IntBytes is Bytes for a size held in an int.
func (fs *flagSet) IntBytes(p *int, name string, def int, help string) {
	bytesVar(fs, p, name, def, help)
}

func bytesVar[T ~int | ~int64](fs *flagSet, p *T, name string, def T, help string) {
	*p = def
	v := byteSize[T]{p}
	if s, ok := fs.env(name); ok {
		if err := v.Set(s); err != nil {
			fs.envErrs = append(fs.envErrs, fmt.Errorf("$%s: %w", envName(name), err))
		}
	}
	fs.Var(v, name, help+" ($"+envName(name)+")")
}

// Value registers a flag of any flag.Value (an enum): its environment
// twin is read with v.Set.
func (fs *flagSet) Value(v flag.Value, name, help string) {
	if env, ok := fs.env(name); ok {
		if err := v.Set(env); err != nil {
			fs.envErrs = append(fs.envErrs, fmt.Errorf("$%s: %w", envName(name), err))
		}
	}
	fs.Var(v, name, help+" ($"+envName(name)+")")
}

// byteSize is a flag.Value of a size in bytes.
type byteSize[T ~int | ~int64] struct{ p *T }

func (b byteSize[T]) String() string {
	if b.p == nil { // the flag package's zero value, for its defaults
		return "0"
	}
	return resource.NewQuantity(int64(*b.p), resource.BinarySI).String()
}

func (b byteSize[T]) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a size (bytes, or e.g. 32Mi): %w", s, err)
	}
	n, ok := q.AsInt64()
	if !ok || n < 0 || int64(T(n)) != n {
		return fmt.Errorf("%q is not a size in bytes", s)
	}
	*b.p = T(n)
	return nil
}

// parse parses args, which must hold flags only, and reports bad
// environment values as a usage error.
func (fs *flagSet) parse(args []string) error { return fs.parseWithArgs(args, 0) }

// parseWithArgs parses flags followed by exactly n positional arguments.
func (fs *flagSet) parseWithArgs(args []string, n int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() != n {
		if n == 0 {
			fmt.Fprintf(fs.Output(), "unexpected arguments: %q\n", fs.Args())
		} else {
			fs.Usage()
		}
		return errUsage
	}
	if err := errors.Join(fs.envErrs...); err != nil {
		fmt.Fprintln(fs.Output(), err)
		return errUsage
	}
	return nil
}

// logConfig is the logging part of every command's configuration.
type logConfig struct {
	level string
}

func (c *logConfig) register(fs *flagSet) {
	fs.String(&c.level, "log-level", "info", "log level: debug, info, warn or error")
}

// logger builds the JSON logger on stderr that every command uses.
func (c *logConfig) logger(stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}
