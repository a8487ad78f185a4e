package collector

import (
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
)

// This file is readyline's knowledge of the kubelet's CRI client, per
// version: which Go functions to probe and where their arguments are.
//
// Known to work: kubelets 1.37.2 and 1.34.4 end to end on deploy/node
// (make test-compat); in v1.35.4 and v1.36.3 as deploy/node builds them the
// methods are found and their cri-api (v0.35, v0.36) has the layout read
// here (README's Compatibility). The methods have had the same signatures and
// package path (k8s.io/cri-client/pkg, split out of the kubelet in 1.31)
// since 1.31, so 1.31-1.33 should work with the ids and timings; the nested
// fields (pod UID, container name, image) are read only when the kubelet's
// k8s.io/cri-api is one of criAPIMinorsLikeLinked. Before 1.31 the client
// lived in k8s.io/kubernetes/pkg/kubelet/cri/remote: supporting it means
// adding its symbol names below (the register layouts are the same).

// criClientPackage is the Go package of the kubelet's CRI client.
const criClientPackage = "k8s.io/cri-client/pkg"

// criOffsets are the byte offsets of the protobuf message fields the probes
// read, in the k8s.io/cri-api linked into readyline.
type criOffsets struct {
	sandboxConfigMetadata uintptr // PodSandboxConfig.Metadata (*PodSandboxMetadata)
	sandboxMetadataUID    uintptr // PodSandboxMetadata.Uid (string)
	containerConfigMeta   uintptr // ContainerConfig.Metadata (*ContainerMetadata)
	containerMetadataName uintptr // ContainerMetadata.Name (string)
	imageSpecImage        uintptr // ImageSpec.Image (string)
}

func fieldOffset(v any, name string) uintptr {
	f, ok := reflect.TypeOf(v).FieldByName(name)
	if !ok {
		panic(fmt.Sprintf("cri-api: %T has no field %s", v, name)) // a build-time fact
	}
	return f.Offset
}

// criAPIMinorsLikeLinked are the k8s.io/cri-api minor versions whose
// PodSandboxConfig, PodSandboxMetadata, ContainerConfig, ContainerMetadata
// and ImageSpec have the linked version's offsets for the fields in
// criOffsets (TestIntegrationCRIAPILayouts compiles against each to check).
// A kubelet with another one is traced with ids only.
var criAPIMinorsLikeLinked = []string{"v0.34", "v0.35", "v0.36", "v0.37"}

// linkedCRIOffsets are the offsets in the linked k8s.io/cri-api.
var linkedCRIOffsets = criOffsets{
	sandboxConfigMetadata: fieldOffset(runtimeapi.PodSandboxConfig{}, "Metadata"),
	sandboxMetadataUID:    fieldOffset(runtimeapi.PodSandboxMetadata{}, "Uid"),
	containerConfigMeta:   fieldOffset(runtimeapi.ContainerConfig{}, "Metadata"),
	containerMetadataName: fieldOffset(runtimeapi.ContainerMetadata{}, "Name"),
	imageSpecImage:        fieldOffset(runtimeapi.ImageSpec{}, "Image"),
}

// criMethod is one probed method of the kubelet's CRI client.
type criMethod struct {
	// Method is the gRPC method (what the kubelet's own tracing calls its
	// span), Symbol the Go function in the kubelet.
	Method event.CRIMethod
	Symbol string
	// spec says which registers to read (Go ABIInternal's integer
	// registers by index, the same on amd64 and arm64: bpf.IntReg0; the
	// receiver is the first argument); nested reads use o, or are left out
	// when o is nil (an unknown cri-api layout).
	spec func(o *criOffsets) bpf.GoprobeFuncSpec
	// fill puts what was read into the event.
	fill func(c *event.CRICall, r *GoCallRecord)
	// names: the call is not reported; what it read names the pod and
	// volume of the CSI calls after it on its goroutine (csiNames).
	names bool
}

func noRegs() bpf.GoprobeFuncSpec {
	return bpf.GoprobeFuncSpec{StrArg: bpf.NoReg, SliceArg: bpf.NoReg, RetStr: bpf.NoReg, RetErr: bpf.NoReg}
}

// sandboxUID reads PodSandboxConfig.Metadata.Uid through the pointer in reg.
func sandboxUID(reg uint8, o *criOffsets) bpf.GoprobeDerefSpec {
	if o == nil {
		return bpf.GoprobeDerefSpec{}
	}
	return bpf.GoprobeDerefSpec{Reg: reg, Kind: bpf.DerefPtrString,
		Off1: uint32(o.sandboxConfigMetadata), Off2: uint32(o.sandboxMetadataUID)}
}

// idCall is a RuntimeService method whose one string argument is a
// container or sandbox id and whose only result is an error:
// func(ctx, id string, ...) error.
func idCall(m event.CRIMethod, sandbox bool) criMethod {
	return criMethod{
		Method: m,
		Symbol: criClientPackage + ".(*remoteRuntimeService)." + m.Short(),
		spec: func(*criOffsets) bpf.GoprobeFuncSpec {
			s := noRegs()
			s.StrArg, s.RetErr = bpf.IntReg3, bpf.IntReg0 // (r 0, ctx 1:2, id 3:4) error 0:1
			return s
		},
		fill: func(c *event.CRICall, r *GoCallRecord) {
			if sandbox {
				c.PodSandboxID = r.Str
			} else {
				c.ContainerID = r.Str
			}
		},
	}
}

// criMethods are the probed methods; a function id is an index here.
var criMethods = []criMethod{
	{
		// RunPodSandbox(ctx, config *PodSandboxConfig, runtimeHandler string) (string, error)
		Method: event.CRIRunPodSandbox,
		Symbol: criClientPackage + ".(*remoteRuntimeService).RunPodSandbox",
		spec: func(o *criOffsets) bpf.GoprobeFuncSpec {
			s := noRegs()
			// (r 0, ctx 1:2, config 3, runtimeHandler 4:5) (string 0:1, error 2:3)
			s.Deref[0] = sandboxUID(bpf.IntReg3, o)
			s.RetStr, s.RetErr = bpf.IntReg0, bpf.IntReg2
			return s
		},
		fill: func(c *event.CRICall, r *GoCallRecord) { c.PodUID, c.PodSandboxID = r.Deref[0], r.Ret },
	},
	idCall(event.CRIStopPodSandbox, true),
	idCall(event.CRIRemovePodSandbox, true),
	{
		// CreateContainer(ctx, podSandboxID string, config *ContainerConfig,
		//                 sandboxConfig *PodSandboxConfig) (string, error)
		Method: event.CRICreateContainer,
		Symbol: criClientPackage + ".(*remoteRuntimeService).CreateContainer",
		spec: func(o *criOffsets) bpf.GoprobeFuncSpec {
			s := noRegs()
			// (r 0, ctx 1:2, podSandboxID 3:4, config 5, sandboxConfig 6) (string 0:1, error 2:3)
			s.StrArg = bpf.IntReg3
			if o != nil {
				s.Deref[0] = bpf.GoprobeDerefSpec{Reg: bpf.IntReg5, Kind: bpf.DerefPtrString,
					Off1: uint32(o.containerConfigMeta), Off2: uint32(o.containerMetadataName)}
			}
			s.Deref[1] = sandboxUID(bpf.IntReg6, o)
			s.RetStr, s.RetErr = bpf.IntReg0, bpf.IntReg2
			return s
		},
		fill: func(c *event.CRICall, r *GoCallRecord) {
			c.PodSandboxID, c.ContainerName, c.PodUID, c.ContainerID = r.Str, r.Deref[0], r.Deref[1], r.Ret
		},
	},
	idCall(event.CRIStartContainer, false),
	idCall(event.CRIStopContainer, false),
	idCall(event.CRIRemoveContainer, false),
	{
		// ExecSync(ctx, containerID string, cmd []string, timeout time.Duration)
		//         (stdout []byte, stderr []byte, err error)
		Method: event.CRIExecSync,
		Symbol: criClientPackage + ".(*remoteRuntimeService).ExecSync",
		spec: func(*criOffsets) bpf.GoprobeFuncSpec {
			s := noRegs()
			// (r 0, ctx 1:2, containerID 3:4, cmd 5:6:7, timeout 8): all
			// nine of amd64's registers, so the same on arm64
			s.StrArg, s.SliceArg = bpf.IntReg3, bpf.IntReg5
			s.RetErr = bpf.IntReg6 // after stdout 0:1:2 and stderr 3:4:5
			return s
		},
		fill: func(c *event.CRICall, r *GoCallRecord) { c.ContainerID, c.Cmd = r.Str, r.Cmd }, // redacted by toEvent
	},
	{
		// PullImage(ctx, image *ImageSpec, auth *AuthConfig,
		//           podSandboxConfig *PodSandboxConfig) (string, error)
		Method: event.CRIPullImage,
		Symbol: criClientPackage + ".(*remoteImageService).PullImage",
		spec: func(o *criOffsets) bpf.GoprobeFuncSpec {
			s := noRegs()
			// (r 0, ctx 1:2, image 3, auth 4, podSandboxConfig 5) (string 0:1, error 2:3)
			if o != nil {
				s.Deref[0] = bpf.GoprobeDerefSpec{Reg: bpf.IntReg3, Kind: bpf.DerefString, Off1: uint32(o.imageSpecImage)}
			}
			s.Deref[1] = sandboxUID(bpf.IntReg5, o)
			s.RetStr, s.RetErr = bpf.IntReg0, bpf.IntReg2
			return s
		},
		fill: func(c *event.CRICall, r *GoCallRecord) { c.Image, c.PodUID, c.ImageRef = r.Deref[0], r.Deref[1], r.Ret },
	},
}

// kubeletCRILayout returns the field offsets for a kubelet whose build info
// is info, or nil when its k8s.io/cri-api is not one readyline knows the
// layout of; criAPI is that version ("" when the binary does not say).
func kubeletCRILayout(info *debug.BuildInfo) (o *criOffsets, criAPI string) {
	if info != nil {
		criAPI = stagingVersion(info, "k8s.io/cri-api")
	}
	if sameMinor(criAPI, linkedCRIAPIVersion()) {
		return &linkedCRIOffsets, criAPI
	}
	for _, m := range criAPIMinorsLikeLinked {
		if sameMinor(criAPI, m+".0") {
			return &linkedCRIOffsets, criAPI
		}
	}
	return nil, criAPI
}

// kubeletVersion is the Kubernetes version of a kubelet by its build info
// (its main module's: v1.34.4 from the module proxy, or the tag of a build
// in the kubernetes tree), or "unknown".
func kubeletVersion(info *debug.BuildInfo) string {
	if info != nil && info.Main.Path == "k8s.io/kubernetes" && strings.HasPrefix(info.Main.Version, "v1.") {
		return info.Main.Version
	}
	return "unknown"
}

// knownKubelets says which kubelets readyline knows, for a message about
// one it does not.
func knownKubelets() string {
	return "1." + strings.TrimPrefix(criAPIMinorsLikeLinked[0], "v0.") + "-1." +
		strings.TrimPrefix(criAPIMinorsLikeLinked[len(criAPIMinorsLikeLinked)-1], "v0.")
}

// sameMinor reports whether two module versions (v0.37.2) share major and
// minor.
func sameMinor(a, b string) bool {
	mm := func(v string) string {
		parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
		if len(parts) < 2 {
			return v
		}
		return parts[0] + "." + parts[1]
	}
	return a != "" && mm(a) == mm(b)
}

// stagingVersion is the version of a Kubernetes staging module (k8s.io/cri-api)
// in a binary's build info: its replacement's version when it was replaced
// (built from the module proxy: v0.0.0 => v0.37.2), the kubelet's own
// v1.X.Y as v0.X.Y when it was built from the kubernetes tree
// (=> ./staging/...), else its plain version.
func stagingVersion(info *debug.BuildInfo, path string) string {
	for _, dep := range info.Deps {
		if dep.Path != path {
			continue
		}
		switch {
		case dep.Replace != nil && dep.Replace.Version != "":
			return dep.Replace.Version
		case dep.Replace != nil && info.Main.Path == "k8s.io/kubernetes" && strings.HasPrefix(info.Main.Version, "v1."):
			return "v0." + strings.TrimPrefix(info.Main.Version, "v1.")
		}
		return dep.Version
	}
	return ""
}

// linkedCRIAPIVersion is the k8s.io/cri-api version linked into readyline.
func linkedCRIAPIVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/cri-api" {
				return dep.Version
			}
		}
	}
	return criAPIFallbackVersion
}

// criAPIFallbackVersion is go.mod's k8s.io/cri-api, for binaries without
// build info (tests).
const criAPIFallbackVersion = "v0.37.2"
