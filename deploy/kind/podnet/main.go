// Command podnet is the pod network of readyline's local kind node image
// (deploy/kind/node-image): kind's own kindnetd is not on the Go module proxy,
// so the image brings this instead. It runs on every node (a DaemonSet on the
// host network) and does two things, every few seconds:
//
//   - writes /etc/cni/net.d/10-podnet.conflist for this node's podCIDR: the
//     bridge plugin with host-local IPAM, then portmap (the CNI plugins of
//     Debian's containernetworking-plugins in the node image, whose ADD
//     readyline traces like any other plugin's);
//   - routes every other node's podCIDR through that node's InternalIP, so
//     that pods reach pods on the other nodes (the nodes share one bridge).
//
// Pods reach only the cluster: there is no masquerading to the outside.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	confName = "10-podnet.conflist"
	interval = 5 * time.Second
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("podnet failed", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	node := os.Getenv("NODE_NAME")
	if node == "" {
		return fmt.Errorf("NODE_NAME is not set")
	}
	confDir := envOr("CNI_CONF_DIR", "/etc/cni/net.d")
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("reading the in-cluster config: %w", err)
	}
	// The kubernetes Service (kube-proxy serves it on the host network before
	// any pod network exists), not kind's CONTROL_PLANE_ENDPOINT: that names
	// the control-plane container, which only Docker's DNS at 127.0.0.11
	// resolves, and the node image hands pods the gateway instead (entrypoint).
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making the API client: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	for {
		if err := sync(ctx, client, node, confDir, log); err != nil {
			log.Warn("syncing the pod network", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// sync writes this node's CNI configuration and the routes to the other nodes.
func sync(ctx context.Context, client kubernetes.Interface, self, confDir string, log *slog.Logger) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		cidr, err := netip.ParsePrefix(n.Spec.PodCIDR)
		if err != nil || !cidr.Addr().Is4() {
			continue // not allocated yet
		}
		if n.Name == self {
			changed, err := writeConf(confDir, cidr)
			if err != nil {
				return err
			}
			if changed {
				log.Info("wrote the CNI configuration", "node", self, "podCIDR", cidr.String())
			}
			continue
		}
		var via netip.Addr
		for _, a := range n.Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); err == nil && a.Type == "InternalIP" && ip.Is4() {
				via = ip
			}
		}
		if !via.IsValid() {
			continue
		}
		if err := replaceRoute(cidr, via); err != nil {
			return fmt.Errorf("routing %s via %s (node %s): %w", cidr, via, n.Name, err)
		}
	}
	return nil
}

// Conflist returns the CNI configuration of a node whose pods get addresses
// from cidr.
func Conflist(cidr netip.Prefix) []byte {
	return fmt.Appendf(nil, `{
  "cniVersion": "0.4.0",
  "name": "podnet",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "podnet0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, cidr.String())
}

// writeConf writes the conflist for cidr into dir unless it is there already,
// through a rename so that the runtime never reads half a file.
func writeConf(dir string, cidr netip.Prefix) (bool, error) {
	want := Conflist(cidr)
	path := filepath.Join(dir, confName)
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, want) {
		return false, nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, want, 0o644); err != nil {
		return false, fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("renaming %s: %w", tmp, err)
	}
	return true, nil
}

// replaceRoute sets the route to dst through the gateway via in the main table
// (RTM_NEWROUTE with NLM_F_REPLACE: `ip route replace dst via via`).
func replaceRoute(dst netip.Prefix, via netip.Addr) error {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("opening a netlink socket: %w", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Sendto(fd, RouteMessage(dst, via), 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fmt.Errorf("sending the route: %w", err)
	}
	buf := make([]byte, 4096)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return fmt.Errorf("reading netlink's answer: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return fmt.Errorf("parsing netlink's answer: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type == syscall.NLMSG_ERROR && len(m.Data) >= 4 {
			if errno := int32(nativeEndian.Uint32(m.Data[:4])); errno != 0 {
				return syscall.Errno(-errno)
			}
		}
	}
	return nil
}

// RouteMessage returns the netlink request that replaces the IPv4 route to
// dst with one through via.
func RouteMessage(dst netip.Prefix, via netip.Addr) []byte {
	attr := func(typ uint16, data []byte) []byte {
		b := make([]byte, 4, 4+len(data)+3)
		nativeEndian.PutUint16(b[0:2], uint16(4+len(data)))
		nativeEndian.PutUint16(b[2:4], typ)
		b = append(b, data...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	d4, v4 := dst.Masked().Addr().As4(), via.As4()
	rtm := []byte{
		syscall.AF_INET, byte(dst.Bits()), 0, 0, // family, dst_len, src_len, tos
		syscall.RT_TABLE_MAIN, syscall.RTPROT_BOOT, syscall.RT_SCOPE_UNIVERSE, syscall.RTN_UNICAST,
		0, 0, 0, 0, // flags
	}
	body := append(rtm, attr(syscall.RTA_DST, d4[:])...)
	body = append(body, attr(syscall.RTA_GATEWAY, v4[:])...)
	msg := make([]byte, syscall.NLMSG_HDRLEN, syscall.NLMSG_HDRLEN+len(body))
	nativeEndian.PutUint32(msg[0:4], uint32(syscall.NLMSG_HDRLEN+len(body)))
	nativeEndian.PutUint16(msg[4:6], syscall.RTM_NEWROUTE)
	nativeEndian.PutUint16(msg[6:8], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK|syscall.NLM_F_CREATE|syscall.NLM_F_REPLACE)
	nativeEndian.PutUint32(msg[8:12], 1) // sequence
	return append(msg, body...)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// nativeEndian is netlink's byte order: the host's (amd64 and arm64: little).
var nativeEndian = binary.NativeEndian
