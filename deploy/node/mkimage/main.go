// Command mkimage writes a single-layer container image archive from a root
// file system directory, without Docker or a registry.
//
//	mkimage -rootfs DIR -ref localhost/busybox:local -o busybox.tar -cmd '["sh"]'
//
// The archive is an OCI image layout that is also a docker-archive; import it
// with `ctr -n k8s.io images import busybox.tar`. Runs are reproducible: the
// creation time and every file time come from SOURCE_DATE_EPOCH (default 0).
//
// With -platform instead of -rootfs and -arch, the image is a multi-platform
// one, an image index with a manifest and a layer for each platform:
//
//	mkimage -platform linux/amd64=DIR -platform linux/arm64=DIR2 -ref ... -o ...
//
// Its docker-archive part has the host's platform only (WriteIndexArchive).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// platformsFlag collects -platform OS/ARCH[/VARIANT]=DIR.
type platformsFlag []PlatformRootfs

func (p *platformsFlag) String() string {
	var s []string
	for _, pr := range *p {
		s = append(s, pr.Platform.String()+"="+pr.Rootfs)
	}
	return strings.Join(s, ",")
}

func (p *platformsFlag) Set(v string) error {
	platform, dir, ok := strings.Cut(v, "=")
	if !ok || dir == "" {
		return fmt.Errorf("want OS/ARCH=DIR, got %q", v)
	}
	pl, err := ParsePlatform(platform)
	if err != nil {
		return err
	}
	*p = append(*p, PlatformRootfs{Platform: pl, Rootfs: dir})
	return nil
}

// jsonArgs parses an exec-form argument list such as '["httpd","-f"]'.
type jsonArgs struct {
	args []string
	set  bool
}

func (j *jsonArgs) String() string { b, _ := json.Marshal(j.args); return string(b) }
func (j *jsonArgs) Set(v string) error {
	j.set = true
	if err := json.Unmarshal([]byte(v), &j.args); err != nil {
		return fmt.Errorf("want a JSON array of strings: %w", err)
	}
	return nil
}

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(argv []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	var (
		rootfs  = fs.String("rootfs", "", "root file system directory (required, but for -platform)")
		ref     = fs.String("ref", "", "image reference, e.g. localhost/busybox:local (required)")
		out     = fs.String("o", "", "output archive (required)")
		arch    = fs.String("arch", runtime.GOARCH, "image architecture")
		workdir = fs.String("workdir", "/", "working directory")
		user    = fs.String("user", "", "user (name or uid[:gid]) the process runs as")
		entry   jsonArgs
		cmd     jsonArgs
		env     listFlag
		ports   listFlag
		labels  listFlag
		plats   platformsFlag
	)
	fs.Var(&plats, "platform", "OS/ARCH=DIR: a platform of a multi-platform image and its root file system (repeatable; instead of -rootfs and -arch)")
	fs.Var(&entry, "entrypoint", `entrypoint as a JSON array, e.g. '["/pause"]'`)
	fs.Var(&cmd, "cmd", `command as a JSON array, e.g. '["sh"]'`)
	fs.Var(&env, "env", "KEY=VALUE environment entry (repeatable; PATH has a default)")
	fs.Var(&ports, "expose", "exposed port such as 80/tcp (repeatable)")
	fs.Var(&labels, "label", "KEY=VALUE label (repeatable)")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if (*rootfs == "" && len(plats) == 0) || *ref == "" || *out == "" {
		fs.Usage()
		return errors.New("-rootfs (or -platform), -ref and -o are required")
	}
	if len(plats) > 0 {
		archSet := false
		fs.Visit(func(f *flag.Flag) { archSet = archSet || f.Name == "arch" })
		if *rootfs != "" || archSet {
			return errors.New("-platform replaces -rootfs and -arch: give one or the other")
		}
	}
	for _, p := range plats {
		if !isDir(p.Rootfs) {
			return fmt.Errorf("-platform %s: %s is not a directory", p.Platform, p.Rootfs)
		}
	}
	if len(plats) == 0 && !isDir(*rootfs) {
		return fmt.Errorf("-rootfs %s is not a directory", *rootfs)
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	img := Image{
		Ref: *ref, OS: "linux", Architecture: *arch, Created: created,
		Entrypoint: entry.args, Cmd: cmd.args, WorkingDir: *workdir, User: *user,
		Env: withDefaultPath(env), ExposedPorts: ports,
	}
	if len(labels) > 0 {
		img.Labels = map[string]string{}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return fmt.Errorf("-label %q: want KEY=VALUE", l)
			}
			img.Labels[k] = v
		}
	}

	tmp := *out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if len(plats) > 0 {
		err = WriteIndexArchive(f, img, plats, Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH})
	} else {
		err = WriteArchive(f, *rootfs, img)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, *out)
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func withDefaultPath(env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			return env
		}
	}
	return append([]string{defaultPath}, env...)
}

func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", v, err)
	}
	return time.Unix(n, 0).UTC(), nil
}
