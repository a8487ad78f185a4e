package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// atomicVolume lays files out as the kubelet's atomic writer does: the
// data in a timestamped directory, ..data linking to it, each name at the
// top a link into ..data.
func atomicVolume(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_12_06_01_02_03.123")
	for name, content := range files {
		p := filepath.Join(data, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		top := strings.SplitN(name, "/", 2)[0]
		if _, err := os.Lstat(filepath.Join(dir, top)); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", top), filepath.Join(dir, top)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReadVolume(t *testing.T) {
	dir := atomicVolume(t, map[string]string{"token": "abc", "nested/key": "k", "big": strings.Repeat("x", 100<<10)})
	// A link a writer could not have made: not followed.
	if err := os.Symlink("/etc/shadow", filepath.Join(dir, "..data", "evil")); err != nil {
		t.Fatal(err)
	}
	files, err := readVolume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(files["token"]) != "abc" || string(files["nested/key"]) != "k" || len(files["big"]) != 64<<10 {
		t.Errorf("files %q %q, big %d bytes (want the first 64 KiB)", files["token"], files["nested/key"], len(files["big"]))
	}
	if _, ok := files["evil"]; ok || len(files) != 3 {
		t.Errorf("read %d files, a link among them: %v", len(files), keysOf(files))
	}
}

func TestFindMount(t *testing.T) {
	info := filepath.Join(t.TempDir(), "mountinfo")
	content := `22 1 0:21 / / rw - ext4 /dev/vda rw
301 22 0:52 / /var/lib/readyline-node/kubelet/pods/uid-1/volumes/kubernetes.io~secret/my\040creds rw,relatime - tmpfs tmpfs rw
302 22 0:53 / /var/lib/kubelet/pods/uid-2/volumes/kubernetes.io~projected/kube-api-access-x rw - tmpfs tmpfs rw
`
	if err := os.WriteFile(info, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := findMount(info, "/pods/uid-1/volumes/kubernetes.io~secret/my creds")
	if err != nil || got != "/var/lib/readyline-node/kubelet/pods/uid-1/volumes/kubernetes.io~secret/my creds" {
		t.Errorf("findMount = %q, %v", got, err)
	}
	if _, err := findMount(info, "/pods/uid-3/volumes/kubernetes.io~secret/x"); err != errNoMount {
		t.Errorf("a volume not mounted: %v, want errNoMount", err)
	}
}

// BenchmarkFindMount: a pod's Secret volume looked for in the mountinfo of
// a node of 110 pods (a projected token, a Secret, a configMap and the
// containers' rootfs overlay and shm each), the last pod's.
func BenchmarkFindMount(b *testing.B) {
	var info strings.Builder
	info.WriteString("22 1 0:21 / / rw - ext4 /dev/vda rw\n")
	for i := range 110 {
		for j, v := range []string{"kubernetes.io~projected/kube-api-access-x", "kubernetes.io~secret/creds", "kubernetes.io~configmap/cfg"} {
			fmt.Fprintf(&info, "%d 22 0:%d / /var/lib/kubelet/pods/5e0a7c1d-2b3f-4c5d-8e6f-%012d/volumes/%s rw,relatime - tmpfs tmpfs rw,size=1024k\n", 300+4*i+j, 60+i, i, v)
		}
		fmt.Fprintf(&info, "%d 22 0:%d / /run/containerd/io.containerd.runtime.v2.task/k8s.io/%064d/rootfs rw,relatime - overlay overlay rw,lowerdir=/a:/b,upperdir=/c,workdir=/d\n", 303+4*i, 200+i, i)
	}
	path := filepath.Join(b.TempDir(), "mountinfo")
	if err := os.WriteFile(path, []byte(info.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	suffix := "/pods/5e0a7c1d-2b3f-4c5d-8e6f-000000000109/volumes/kubernetes.io~secret/creds"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := findMount(path, suffix); err != nil {
			b.Fatal(err)
		}
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
