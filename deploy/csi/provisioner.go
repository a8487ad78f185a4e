package csi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Parameters of a StorageClass of the driver that Provision obeys. The
// class's other parameters become its volumes' attributes (stageDelay,
// publishDelay, ...), as a real driver's CreateVolume answers a volume
// context made of them.
const (
	// ParamProvisionDelay: each CreateVolume takes that long ("4s").
	ParamProvisionDelay = "provisionDelay"
	// ParamProvisionFailures: the first that many CreateVolume calls of a
	// claim fail (codes.Unavailable); Provision retries after a back-off
	// of 1 s, doubling.
	ParamProvisionFailures = "provisionFailures"
)

// Annotations the provisioner reads and writes, the Kubernetes PV
// controller's and scheduler's.
const (
	// AnnStorageProvisioner names the provisioner the PV controller
	// expects to provision a claim (set once the claim needs one: for a
	// class that waits for its first consumer, after the scheduler chose
	// a node).
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// AnnSelectedNode is the node the scheduler chose for a claim of a
	// class that waits for its first consumer.
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnProvisionedBy marks a PersistentVolume with its provisioner: the
	// PV controller leaves the deletion of a released one to it.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
)

// Event reasons the provisioner records on a claim, the CSI
// external-provisioner's.
const (
	ReasonProvisioning          = "Provisioning"
	ReasonProvisioningSucceeded = "ProvisioningSucceeded"
	ReasonProvisioningFailed    = "ProvisioningFailed"
)

// MethodCreateVolume is the Call Provision logs for each attempt at a
// claim's volume: from its start (after the Provisioning Event) to the
// PersistentVolume's creation, or to the failure.
const MethodCreateVolume = "CreateVolume"

// ProvisionedVolumeName is the name of the PersistentVolume Provision
// makes for the claim of uid (the external-provisioner's "pvc-<uid>").
func ProvisionedVolumeName(uid types.UID) string { return "pvc-" + string(uid) }

// ProvisionedVolumeHandle is the CSI volume handle of PersistentVolume
// pv made by Provision.
func ProvisionedVolumeHandle(pv string) string { return "vol-" + pv }

// Provision is the driver's provisioner, until ctx ends: as the CSI
// external-provisioner does, it makes a PersistentVolume for each unbound
// claim the PV controller left to the driver (AnnStorageProvisioner),
// once the scheduler chose its node when its class waits for the first
// consumer; the PV controller binds the two. Each attempt records a
// Provisioning Event on the claim, takes the class's provisionDelay and
// ends in ProvisioningSucceeded or ProvisioningFailed; each is logged as
// a MethodCreateVolume Call. It deletes the released volumes it made
// whose reclaim policy is Delete. A claim whose volume exists already (a
// Provision before this one made it) is left to the PV controller.
// Provision polls the API every 100 ms, like Attach.
func (d *Driver) Provision(ctx context.Context, client kubernetes.Interface) {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	p := &provisioner{
		d:      d,
		client: client,
		// The external-provisioner's source: driver, host, then an id of
		// its run (left out: one driver per node here).
		events: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: d.Name + "_" + d.NodeID}),
	}
	started := map[types.UID]bool{}
	everyTick(ctx, func() {
		claims, err := client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for i := range claims.Items {
			claim := &claims.Items[i]
			if started[claim.UID] {
				continue
			}
			if class, ok := p.due(ctx, claim); ok {
				started[claim.UID] = true
				go p.provision(ctx, claim, class)
			}
		}
		p.deleteReleased(ctx)
	})
}

type provisioner struct {
	d      *Driver
	client kubernetes.Interface
	events record.EventRecorder
}

// due says whether claim is one for the driver to provision now, and its
// class.
func (p *provisioner) due(ctx context.Context, claim *corev1.PersistentVolumeClaim) (*storagev1.StorageClass, bool) {
	if claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil || claim.Spec.StorageClassName == nil {
		return nil, false
	}
	name := claim.Annotations[AnnStorageProvisioner]
	if name == "" {
		name = claim.Annotations[AnnBetaStorageProvisioner]
	}
	if name != p.d.Name {
		return nil, false
	}
	class, err := p.client.StorageV1().StorageClasses().Get(ctx, *claim.Spec.StorageClassName, metav1.GetOptions{})
	if err != nil || class.Provisioner != p.d.Name {
		return nil, false
	}
	waits := class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	if waits && claim.Annotations[AnnSelectedNode] == "" {
		return nil, false
	}
	return class, true
}

// provision makes claim's volume, retrying failed attempts after a
// back-off, until it is made, the claim is gone or bound, or ctx ends.
func (p *provisioner) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) {
	pvName := ProvisionedVolumeName(claim.UID)
	if _, err := p.client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{}); err == nil {
		return
	}
	key := claim.Namespace + "/" + claim.Name
	delay, failures, err := provisionParams(class.Parameters)
	if err != nil {
		p.events.Eventf(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, "failed to provision volume with StorageClass %q: %v", class.Name, err)
		return
	}
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		p.events.Eventf(claim, corev1.EventTypeNormal, ReasonProvisioning, "External provisioner is provisioning volume for claim %q", key)
		err := p.d.timed(ctx, MethodCreateVolume, ProvisionedVolumeHandle(pvName), delay, func() error {
			if attempt <= failures {
				return status.Errorf(codes.Unavailable, "create attempt %d of volume %s fails, as asked (%d failures)", attempt, pvName, failures)
			}
			return p.createVolume(ctx, claim, class, pvName)
		})
		if err == nil {
			p.events.Eventf(claim, corev1.EventTypeNormal, ReasonProvisioningSucceeded, "Successfully provisioned volume %s", pvName)
			return
		}
		p.events.Eventf(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, "failed to provision volume with StorageClass %q: %v", class.Name, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
		now, err := p.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil || now.UID != claim.UID || now.Spec.VolumeName != "" || now.DeletionTimestamp != nil {
			return
		}
	}
}

// createVolume creates claim's PersistentVolume pvName of class; one that
// exists already is fine.
func (p *provisioner) createVolume(ctx context.Context, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, pvName string) error {
	attrs := map[string]string{}
	for k, v := range class.Parameters {
		if k != ParamProvisionDelay && k != ParamProvisionFailures && !strings.HasPrefix(k, "csi.storage.k8s.io/") {
			attrs[k] = v
		}
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Annotations: map[string]string{AnnProvisionedBy: p.d.Name}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    claim.Spec.VolumeMode,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: p.d.Name, VolumeHandle: ProvisionedVolumeHandle(pvName), VolumeAttributes: attrs}},
		},
	}
	if node := claim.Annotations[AnnSelectedNode]; node != "" {
		affinity, err := p.nodeAffinity(ctx, node)
		if err != nil {
			return status.Errorf(codes.Internal, "reading node %s: %v", node, err)
		}
		pv.Spec.NodeAffinity = affinity
	}
	_, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return status.Errorf(codes.Internal, "creating PersistentVolume %s: %v", pvName, err)
	}
	return nil
}

// nodeAffinity pins a volume to node by its hostname label: the scheduler
// matches a volume's node affinity against node labels only.
func (p *provisioner) nodeAffinity(ctx context.Context, node string) (*corev1.VolumeNodeAffinity, error) {
	n, err := p.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	host, ok := n.Labels[corev1.LabelHostname]
	if !ok {
		return nil, fmt.Errorf("node %s has no %s label", node, corev1.LabelHostname)
	}
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{host}}},
	}}}}, nil
}

// deleteReleased deletes the driver's volumes the PV controller released
// for deletion (their claim is gone, their reclaim policy Delete).
func (p *provisioner) deleteReleased(ctx context.Context) {
	pvs, err := p.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, pv := range pvs.Items {
		if pv.Annotations[AnnProvisionedBy] != p.d.Name || pv.Spec.CSI == nil || pv.DeletionTimestamp != nil ||
			pv.Status.Phase != corev1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
			continue
		}
		err := p.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pv.UID}})
		if err == nil || apierrors.IsNotFound(err) {
			p.d.mu.Lock()
			p.d.calls = append(p.d.calls, Call{Method: "DeleteVolume", VolumeID: pv.Spec.CSI.VolumeHandle, Start: time.Now(), End: time.Now()})
			p.d.mu.Unlock()
		}
	}
}

// provisionParams reads a class's provisionDelay and provisionFailures.
func provisionParams(params map[string]string) (time.Duration, int, error) {
	delay, err := attrDuration(params, ParamProvisionDelay)
	if err != nil {
		return 0, 0, fmt.Errorf("parameter %s: %q is not a duration", ParamProvisionDelay, params[ParamProvisionDelay])
	}
	failures := 0
	if v, ok := params[ParamProvisionFailures]; ok {
		if failures, err = strconv.Atoi(v); err != nil || failures < 0 {
			return 0, 0, fmt.Errorf("parameter %s: %q is not a number", ParamProvisionFailures, v)
		}
	}
	return delay, failures, nil
}
