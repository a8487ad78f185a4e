// Package csi is a CSI node plugin for tests: a driver the kubelet
// registers through its plugin registration socket and calls like any
// other (NodeStageVolume, NodePublishVolume over gRPC), whose steps take
// the time and fail the number of times a volume's attributes ask for.
// It stores nothing: a volume is an empty directory.
//
// A PersistentVolume of the driver sets, in spec.csi.volumeAttributes:
//
//	stageDelay: "5s"      NodeStageVolume takes that long
//	publishDelay: "1s"    NodePublishVolume takes that long
//	publishFailures: "2"  the first two NodePublishVolume calls of the
//	                      volume fail (codes.Unavailable)
//	attachDelay: "3s"     Attach marks the volume's VolumeAttachment
//	                      attached that long after it saw it ("never":
//	                      never), for a CSIDriver with attachRequired
//
// Driver.Provision is its provisioner: it makes the PersistentVolume of a
// claim of a StorageClass whose provisioner is the driver, as the CSI
// external-provisioner would, taking the time and failing the number of
// times the class's parameters ask for (provisionDelay,
// provisionFailures); the class's other parameters become the volume's
// attributes.
//
// Every call is logged with its start and end (Driver.Calls), the stamps
// a test compares readyline's with.
package csi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Attributes of a volume (spec.csi.volumeAttributes) the driver obeys.
const (
	AttrStageDelay      = "stageDelay"
	AttrPublishDelay    = "publishDelay"
	AttrPublishFailures = "publishFailures"
	AttrAttachDelay     = "attachDelay"
)

// Call is one call the driver served, as it timed it.
type Call struct {
	Method     string // NodeStageVolume, NodePublishVolume, ...
	VolumeID   string
	Start, End time.Time
	Err        error
}

// Driver is a CSI node plugin serving on a kubelet's node.
type Driver struct {
	// Name is the driver's name (CSIDriver's and the PV's spec.csi.driver).
	Name string
	// NodeID is what NodeGetInfo answers (the node's name).
	NodeID string

	mu        sync.Mutex
	calls     []Call
	published map[string]int // NodePublishVolume calls so far, by volume id

	servers    []*grpc.Server
	paths      []string
	registered chan struct{}
	once       sync.Once
}

// Serve starts the driver for the kubelet whose root directory is
// kubeletDir: its CSI socket under plugins/<name>/, its registration
// socket in plugins_registry/ (the kubelet's plugin watcher finds it and
// registers the driver). Stop ends it.
func (d *Driver) Serve(kubeletDir string) error {
	if d.Name == "" || d.NodeID == "" {
		return errors.New("csi: a driver needs a name and a node id")
	}
	d.published, d.registered = make(map[string]int), make(chan struct{})
	endpoint := filepath.Join(kubeletDir, "plugins", d.Name, "csi.sock")
	csiSrv := grpc.NewServer()
	csipb.RegisterIdentityServer(csiSrv, identity{d: d})
	csipb.RegisterNodeServer(csiSrv, node{d: d})
	if err := d.listen(csiSrv, endpoint); err != nil {
		return err
	}
	regSrv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(regSrv, registration{d: d, endpoint: endpoint})
	if err := d.listen(regSrv, filepath.Join(kubeletDir, "plugins_registry", d.Name+"-reg.sock")); err != nil {
		d.Stop()
		return err
	}
	return nil
}

// listen serves srv on a unix socket at path, replacing a stale one.
func (d *Driver) listen(srv *grpc.Server, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	d.servers, d.paths = append(d.servers, srv), append(d.paths, path)
	go srv.Serve(l) //nolint:errcheck // ends with Stop
	return nil
}

// Stop stops serving and removes the sockets: the kubelet deregisters the
// driver when its registration socket goes.
func (d *Driver) Stop() {
	for i := len(d.servers) - 1; i >= 0; i-- {
		d.servers[i].Stop()
		os.Remove(d.paths[i])
	}
	d.servers, d.paths = nil, nil
}

// Registered is closed once the kubelet said it registered the driver
// (it can mount the driver's volumes from then on).
func (d *Driver) Registered() <-chan struct{} { return d.registered }

// Calls returns the calls served so far, oldest first.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Call(nil), d.calls...)
}

// Attach is the driver's attacher, until ctx ends: as the CSI
// external-attacher does once the driver's ControllerPublishVolume
// returned, it marks each VolumeAttachment of the driver attached, once
// its PersistentVolume's attachDelay has passed since it first saw it. It
// logs a ControllerPublishVolume call for each, from then to the update.
func (d *Driver) Attach(ctx context.Context, client kubernetes.Interface) {
	seen := map[string]time.Time{}
	everyTick(ctx, func() {
		list, err := client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for i := range list.Items {
			va := &list.Items[i]
			pvName := va.Spec.Source.PersistentVolumeName
			if va.Spec.Attacher != d.Name || va.Status.Attached || pvName == nil {
				continue
			}
			first, ok := seen[va.Name]
			if !ok {
				first, seen[va.Name] = time.Now(), time.Now()
			}
			pv, err := client.CoreV1().PersistentVolumes().Get(ctx, *pvName, metav1.GetOptions{})
			if err != nil || pv.Spec.CSI == nil || pv.Spec.CSI.VolumeAttributes[AttrAttachDelay] == "never" {
				continue
			}
			delay, err := attrDuration(pv.Spec.CSI.VolumeAttributes, AttrAttachDelay)
			if err != nil || time.Since(first) < delay {
				continue
			}
			va.Status.Attached = true
			if _, err := client.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil {
				continue
			}
			d.mu.Lock()
			d.calls = append(d.calls, Call{Method: "ControllerPublishVolume", VolumeID: pv.Spec.CSI.VolumeHandle, Start: first, End: time.Now()})
			d.mu.Unlock()
		}
	})
}

// everyTick calls do every 100 ms until ctx ends: the attacher and the
// provisioner list what they act on rather than watch it, as simple as a
// test's fixture can be.
func everyTick(ctx context.Context, do func()) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		do()
	}
}

// timed runs a call, sleeping delay first (or until ctx ends), and logs it.
func (d *Driver) timed(ctx context.Context, method, volID string, delay time.Duration, do func() error) error {
	c := Call{Method: method, VolumeID: volID, Start: time.Now()}
	select {
	case <-time.After(delay):
		c.Err = do()
	case <-ctx.Done():
		c.Err = status.FromContextError(ctx.Err()).Err()
	}
	c.End = time.Now()
	d.mu.Lock()
	d.calls = append(d.calls, c)
	d.mu.Unlock()
	return c.Err
}

func attrDuration(attrs map[string]string, key string) (time.Duration, error) {
	v, ok := attrs[key]
	if !ok {
		return 0, nil
	}
	dur, err := time.ParseDuration(v)
	if err != nil || dur < 0 {
		return 0, status.Errorf(codes.InvalidArgument, "volume attribute %s: %q is not a duration", key, v)
	}
	return dur, nil
}

type identity struct {
	csipb.UnimplementedIdentityServer
	d *Driver
}

func (i identity) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: i.d.Name, VendorVersion: "0.1.0"}, nil
}

func (identity) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	return &csipb.GetPluginCapabilitiesResponse{}, nil // a node plugin alone
}

func (identity) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}

type node struct {
	csipb.UnimplementedNodeServer
	d *Driver
}

func (n node) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return &csipb.NodeGetInfoResponse{NodeId: n.d.NodeID}, nil
}

func (node) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: []*csipb.NodeServiceCapability{{
		Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{
			Type: csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}},
	}}}, nil
}

func (n node) NodeStageVolume(ctx context.Context, req *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	delay, err := attrDuration(req.GetVolumeContext(), AttrStageDelay)
	if err != nil {
		return nil, err
	}
	err = n.d.timed(ctx, "NodeStageVolume", req.GetVolumeId(), delay, func() error {
		return mkdir(req.GetStagingTargetPath())
	})
	return &csipb.NodeStageVolumeResponse{}, err
}

func (n node) NodeUnstageVolume(ctx context.Context, req *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	err := n.d.timed(ctx, "NodeUnstageVolume", req.GetVolumeId(), 0, func() error { return nil })
	return &csipb.NodeUnstageVolumeResponse{}, err
}

func (n node) NodePublishVolume(ctx context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	attrs := req.GetVolumeContext()
	delay, err := attrDuration(attrs, AttrPublishDelay)
	if err != nil {
		return nil, err
	}
	failures := 0
	if v, ok := attrs[AttrPublishFailures]; ok {
		if failures, err = strconv.Atoi(v); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "volume attribute %s: %q is not a number", AttrPublishFailures, v)
		}
	}
	n.d.mu.Lock()
	n.d.published[req.GetVolumeId()]++
	attempt := n.d.published[req.GetVolumeId()]
	n.d.mu.Unlock()
	err = n.d.timed(ctx, "NodePublishVolume", req.GetVolumeId(), delay, func() error {
		if attempt <= failures {
			return status.Errorf(codes.Unavailable, "publish attempt %d of volume %s fails, as asked (%d failures)", attempt, req.GetVolumeId(), failures)
		}
		return mkdir(req.GetTargetPath())
	})
	return &csipb.NodePublishVolumeResponse{}, err
}

func (n node) NodeUnpublishVolume(ctx context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	err := n.d.timed(ctx, "NodeUnpublishVolume", req.GetVolumeId(), 0, func() error {
		if err := os.Remove(req.GetTargetPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return status.Errorf(codes.Internal, "removing %s: %v", req.GetTargetPath(), err)
		}
		return nil
	})
	return &csipb.NodeUnpublishVolumeResponse{}, err
}

// mkdir makes a volume's directory: the driver's volumes are plain
// directories (the kubelet bind-mounts the target into the container).
func mkdir(path string) error {
	if path == "" {
		return status.Error(codes.InvalidArgument, "no path")
	}
	if err := os.MkdirAll(path, 0o750); err != nil {
		return status.Errorf(codes.Internal, "making %s: %v", path, err)
	}
	return nil
}

type registration struct {
	registerapi.UnimplementedRegistrationServer
	d        *Driver
	endpoint string
}

func (r registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.d.Name, Endpoint: r.endpoint,
		SupportedVersions: []string{"1.0.0"}}, nil
}

func (r registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		return nil, fmt.Errorf("the kubelet did not register %s: %s", r.d.Name, s.Error)
	}
	r.d.once.Do(func() { close(r.d.registered) })
	return &registerapi.RegistrationStatusResponse{}, nil
}
