package collector

import (
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestUnpooledCodec(t *testing.T) {
	var c unpooledCodec
	in := &runtimeapi.ListContainersResponse{}
	for i := range 1000 { // past gRPC's 32 KiB pooling tier
		in.Containers = append(in.Containers, &runtimeapi.Container{Id: string(rune('a'+i%26)) + "0123456789abcdef0123456789abcdef", PodSandboxId: "sandbox", State: runtimeapi.ContainerState_CONTAINER_RUNNING})
	}
	data, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if data.Len() < 32<<10 {
		t.Fatalf("message of %d bytes, want one past 32 KiB", data.Len())
	}
	// As the transport hands it over: in frames of 16 KiB.
	b := data.Materialize()
	var frames mem.BufferSlice
	for len(b) > 0 {
		n := min(len(b), 16<<10)
		frames = append(frames, mem.SliceBuffer(b[:n]))
		b = b[n:]
	}
	out := &runtimeapi.ListContainersResponse{}
	if err := c.Unmarshal(frames, out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, out) {
		t.Errorf("round trip changed the message: %d containers, want %d", len(out.Containers), len(in.Containers))
	}
	// And whole, in one buffer, which a transport without a pool gives a
	// message that fits in a frame.
	one := &runtimeapi.ListContainersResponse{}
	if err := c.Unmarshal(data, one); err != nil || !proto.Equal(in, one) {
		t.Errorf("one buffer: %d containers, want %d (%v)", len(one.Containers), len(in.Containers), err)
	}
	if c.Name() != "proto" {
		t.Errorf("Name %q: the content-subtype the runtime expects is proto", c.Name())
	}
	if _, err := c.Marshal("not a message"); err == nil {
		t.Error("Marshal of a string: no error")
	}
	if err := c.Unmarshal(frames, new(int)); err == nil {
		t.Error("Unmarshal into an int: no error")
	}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0xff})}, out); err == nil {
		t.Error("Unmarshal of a truncated message: no error")
	}
}
