package collector

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/readyline/readyline/collector/secrets"
)

// KubeletVolumes reads the files the kubelet wrote into a pod's Secret and
// projected volumes (secrets.FileReader), where the kubelet mounted them:
// it finds the volume's mount under <kubelet root>/pods/<uid>/volumes/ in
// the kubelet's mount namespace (or the node's init's, on a node whose
// kubelet it cannot find), and reads it through /proc/<pid>/root, so it
// needs neither the kubelet's root directory nor a mount of its own. Safe
// for concurrent use.
type KubeletVolumes struct {
	// ProcRoot is the node's /proc ("" for /proc).
	ProcRoot string

	mu  sync.Mutex
	pid int // the kubelet's, once found
}

// Bounds of what VolumeFiles reads of one volume.
const (
	maxVolumeFiles = 256
	maxVolumeBytes = 1 << 20
)

// errNoMount is returned when no mount of the pod's volume is found.
var errNoMount = errors.New("the volume is not mounted (yet)")

// VolumeFiles returns the files of pod uid's volume of the plugin kind
// (secrets.KindSecret, secrets.KindProjected), by their path in the
// volume, each cut at secrets.MaxFileBytes, at most 256 files and 1 MiB.
func (k *KubeletVolumes) VolumeFiles(uid, kind, volume string) (map[string][]byte, error) {
	if strings.ContainsAny(uid+kind+volume, "/\x00") || uid == "" || volume == "" || volume == ".." || volume == "." {
		return nil, fmt.Errorf("reading volume %q of pod %q: not a volume's name", volume, uid)
	}
	suffix := "/pods/" + uid + "/volumes/" + kind + "/" + volume
	var errs []error
	for _, pid := range k.candidates() {
		mount, err := findMount(filepath.Join(k.procRoot(), strconv.Itoa(pid), "mountinfo"), suffix)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return readVolume(filepath.Join(k.procRoot(), strconv.Itoa(pid), "root", mount))
	}
	return nil, fmt.Errorf("reading volume %s of pod %s: %w", volume, uid, errors.Join(errs...))
}

func (k *KubeletVolumes) procRoot() string {
	if k.ProcRoot == "" {
		return "/proc"
	}
	return k.ProcRoot
}

// candidates are the processes whose mount namespace may hold the pod's
// volumes: the kubelet's (found once, again when it went), then the node's
// init's.
func (k *KubeletVolumes) candidates() []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pid != 0 {
		if _, err := os.Stat(filepath.Join(k.procRoot(), strconv.Itoa(k.pid), "mountinfo")); err != nil {
			k.pid = 0
		}
	}
	if k.pid == 0 {
		if scan, err := findKubelets(k.procRoot(), "kubelet", nil); err == nil && len(scan.found) > 0 {
			k.pid = scan.found[0].pid
		}
	}
	if k.pid == 0 || k.pid == 1 {
		return []int{1}
	}
	return []int{k.pid, 1}
}

// findMount returns the mount point in the mountinfo file that ends with
// suffix.
func findMount(mountinfo, suffix string) (string, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// A node's mountinfo has a few lines per pod, read for each pod's
	// Secret volumes as it starts: the lines of other pods are passed over
	// unparsed, without an allocation, by the suffix's part up to the
	// volume's name (a UID and a plugin's name, which mountinfo does not
	// escape, unlike a space in a name).
	want := []byte(suffix)
	if i := strings.LastIndexByte(suffix, '/'); i > 0 {
		want = want[:i]
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4<<10), 1<<20)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), want) {
			continue
		}
		// id parent major:minor root mountpoint ...
		fields := strings.SplitN(sc.Text(), " ", 6)
		if len(fields) < 6 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if strings.HasSuffix(mp, suffix) {
			return mp, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errNoMount
}

// readVolume reads the files of a volume the kubelet's atomic writer
// wrote: the current ones are in the directory ..data links to, the names
// at the top are links into it. Only regular files are read, no link is
// followed inside.
func readVolume(dir string) (map[string][]byte, error) {
	data := filepath.Join(dir, "..data")
	if _, err := os.Stat(data); err != nil {
		data = dir // not written by the atomic writer: the files are here
	}
	root, err := os.OpenRoot(data)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	out := make(map[string][]byte)
	total := 0
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), "..") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if len(out) == maxVolumeFiles || total >= maxVolumeBytes {
			return fs.SkipAll
		}
		f, err := root.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, int64(min(secrets.MaxFileBytes, maxVolumeBytes-total))))
		if err != nil {
			return err
		}
		out[p] = b
		total += len(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
