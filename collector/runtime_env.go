package collector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ErrNoContainerEnv is returned by ContainerEnv when the runtime's verbose
// status carries no environment (a runtime that does not put its
// container's configuration there).
var ErrNoContainerEnv = errors.New("the runtime tells no environment of the container")

// ContainerEnv returns container id's environment as the kubelet gave it to
// the runtime ("NAME=value" each, values from Secrets included): from the
// verbose ContainerStatus, whose info holds the CRI config the kubelet sent
// (containerd 1.7 and 2.x: "config" with its "envs"), or else the OCI
// spec's process environment (which adds the image's). package secrets
// reads it to learn the values it must remove; nothing else keeps it.
// Bounded by CallTimeout; safe for concurrent use, also while Run runs.
func (s *RuntimeSource) ContainerEnv(ctx context.Context, id string) ([]string, error) {
	c := s.conn.Load()
	if c == nil {
		return nil, ErrRuntimeUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	st, err := c.client.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return nil, fmt.Errorf("asking the verbose status of %s: %w", id, criError(err))
	}
	return envOfInfo(st.GetInfo())
}

// verboseInfo is what readyline reads of a runtime's verbose container
// info (containerd's internal/cri/server ContainerInfo, JSON under "info").
type verboseInfo struct {
	Config *struct {
		Envs []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"envs"`
	} `json:"config"`
	RuntimeSpec *struct {
		Process *struct {
			Env []string `json:"env"`
		} `json:"process"`
	} `json:"runtimeSpec"`
}

// envOfInfo reads the environment out of a verbose status' info.
func envOfInfo(info map[string]string) ([]string, error) {
	raw, ok := info["info"]
	if !ok {
		return nil, ErrNoContainerEnv
	}
	var v verboseInfo
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, fmt.Errorf("reading the runtime's verbose info: %w", err)
	}
	if v.Config != nil && len(v.Config.Envs) > 0 {
		env := make([]string, 0, len(v.Config.Envs))
		for _, kv := range v.Config.Envs {
			env = append(env, kv.Key+"="+kv.Value)
		}
		return env, nil
	}
	if v.RuntimeSpec != nil && v.RuntimeSpec.Process != nil && len(v.RuntimeSpec.Process.Env) > 0 {
		return v.RuntimeSpec.Process.Env, nil
	}
	return nil, ErrNoContainerEnv
}
