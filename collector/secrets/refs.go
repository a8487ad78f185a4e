package secrets

import (
	"path"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Refs is what a pod's spec says comes from Secrets: which environment
// variables, which volumes and which of their files. It holds names only,
// never a value, and is read from a pod as event.StripPod keeps it.
type Refs struct {
	// Env is, by container name, what of its environment comes from
	// Secrets.
	Env map[string]EnvRefs
	// Volumes are the pod's volumes that hold Secret files.
	Volumes []VolumeRefs
}

// EnvRefs is what of one container's environment comes from Secrets.
type EnvRefs struct {
	// Names are the variables whose value a secretKeyRef gives.
	Names []string
	// FromSecret is set when an envFrom source is a Secret: its keys are
	// not in the spec, so every variable the spec does not name (and that
	// is no service link) may be one. Prefixes are those sources'
	// prefixes ("" for none: any name).
	FromSecret bool
	Prefixes   []string
	// Declared are the names the spec's env sets otherwise (not Secrets').
	Declared []string
}

// VolumeRefs is one Secret or projected volume: Secret says which of the
// files the kubelet writes into it hold a Secret's value.
type VolumeRefs struct {
	// Name is the volume's name, Kind its plugin's directory under the
	// pod's volumes (kubernetes.io~secret, kubernetes.io~projected).
	Name, Kind string
	// AllSecret is set when every file of the volume is a Secret's (a
	// Secret volume, or a projection with a Secret of unnamed keys).
	AllSecret bool
	// SecretPaths and OtherPaths are the files (paths in the volume) that
	// a projection names: a Secret's items and the service account token,
	// and a ConfigMap's items, the downward API's and the trust bundle.
	// With AllSecret, only OtherPaths are not secret.
	SecretPaths, OtherPaths []string

	tokenOnly bool
}

// TokenOnly says whether the only secret of v is the service account
// token (every pod's kube-api-access volume): a token is a JWT, which
// package redact knows by its shape, so a volume that could not be read
// hides nothing more for it.
func (v *VolumeRefs) TokenOnly() bool { return v.tokenOnly }

// Empty says whether the pod takes nothing from Secrets.
func (r *Refs) Empty() bool { return r == nil || (len(r.Env) == 0 && len(r.Volumes) == 0) }

// Secret says whether the file at p (a path in the volume) holds a
// Secret's value.
func (v *VolumeRefs) Secret(p string) bool {
	p = path.Clean(p)
	for _, o := range v.OtherPaths {
		if path.Clean(o) == p {
			return false
		}
	}
	if v.AllSecret {
		return true
	}
	for _, s := range v.SecretPaths {
		if path.Clean(s) == p {
			return true
		}
	}
	return false
}

// The volume plugins' directories under a pod's volumes.
const (
	KindSecret    = "kubernetes.io~secret"
	KindProjected = "kubernetes.io~projected"
)

// RefsOf reads what pod's spec takes from Secrets, nil when nothing.
func RefsOf(pod *corev1.Pod) *Refs {
	if pod == nil {
		return nil
	}
	r := &Refs{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if e := envRefs(&list[i]); e != nil {
				if r.Env == nil {
					r.Env = make(map[string]EnvRefs)
				}
				r.Env[list[i].Name] = *e
			}
		}
	}
	for i := range pod.Spec.Volumes {
		if v := volumeRefs(&pod.Spec.Volumes[i]); v != nil {
			r.Volumes = append(r.Volumes, *v)
		}
	}
	if r.Empty() {
		return nil
	}
	return r
}

func envRefs(c *corev1.Container) *EnvRefs {
	var e EnvRefs
	for _, f := range c.EnvFrom {
		if f.SecretRef != nil {
			e.FromSecret = true
			e.Prefixes = append(e.Prefixes, f.Prefix)
		}
	}
	for _, v := range c.Env {
		if v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil {
			e.Names = append(e.Names, v.Name)
		} else if e.FromSecret {
			e.Declared = append(e.Declared, v.Name)
		}
	}
	if len(e.Names) == 0 && !e.FromSecret {
		return nil
	}
	return &e
}

func volumeRefs(v *corev1.Volume) *VolumeRefs {
	switch {
	case v.Secret != nil:
		return &VolumeRefs{Name: v.Name, Kind: KindSecret, AllSecret: true}
	case v.Projected != nil:
		r := &VolumeRefs{Name: v.Name, Kind: KindProjected, tokenOnly: true}
		for _, s := range v.Projected.Sources {
			if s.Secret != nil || s.PodCertificate != nil {
				r.tokenOnly = false
			}
			switch {
			case s.Secret != nil:
				if len(s.Secret.Items) == 0 {
					r.AllSecret = true
				}
				for _, it := range s.Secret.Items {
					r.SecretPaths = append(r.SecretPaths, it.Path)
				}
			case s.ServiceAccountToken != nil:
				r.SecretPaths = append(r.SecretPaths, s.ServiceAccountToken.Path)
			case s.PodCertificate != nil:
				// The pod's private key (and its certificate, which is public).
				for _, p := range []string{s.PodCertificate.CredentialBundlePath, s.PodCertificate.KeyPath} {
					if p != "" {
						r.SecretPaths = append(r.SecretPaths, p)
					}
				}
			case s.ConfigMap != nil:
				// A ConfigMap of unnamed keys writes files nobody can tell
				// from a Secret's: with AllSecret they count as secret.
				for _, it := range s.ConfigMap.Items {
					r.OtherPaths = append(r.OtherPaths, it.Path)
				}
			case s.DownwardAPI != nil:
				for _, it := range s.DownwardAPI.Items {
					r.OtherPaths = append(r.OtherPaths, it.Path)
				}
			case s.ClusterTrustBundle != nil:
				r.OtherPaths = append(r.OtherPaths, s.ClusterTrustBundle.Path)
			}
		}
		if !r.AllSecret && len(r.SecretPaths) == 0 {
			return nil
		}
		return r
	}
	return nil
}

// serviceLink matches the variables the kubelet sets for each Service of
// the namespace (enableServiceLinks) and the API server's: their values
// are addresses and ports, no Secret's.
var serviceLink = regexp.MustCompile(`^[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?)?)$`)

// SecretEnv picks, from a container's environment as the runtime holds it
// ("NAME=value" each), the values that come from Secrets by e.
func (e EnvRefs) SecretEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" {
			continue
		}
		if e.secret(name) {
			out = append(out, value)
		}
	}
	return out
}

func (e EnvRefs) secret(name string) bool {
	for _, n := range e.Names {
		if n == name {
			return true
		}
	}
	if !e.FromSecret {
		return false
	}
	for _, n := range e.Declared {
		if n == name {
			return false
		}
	}
	if serviceLink.MatchString(name) || imageEnv[name] {
		return false
	}
	for _, p := range e.Prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// imageEnv are variables an image sets for itself (its config's Env) that
// the runtime's environment holds beside the kubelet's: not a Secret's,
// whatever envFrom says.
var imageEnv = map[string]bool{"PATH": true, "HOME": true, "HOSTNAME": true, "TERM": true, "LANG": true, "LC_ALL": true,
	"PWD": true, "SHLVL": true, "USER": true, "SHELL": true}
