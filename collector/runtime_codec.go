package collector

import (
	"fmt"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// unpooledCodec is gRPC's protobuf codec without its buffer pool, for the
// CRI connection. gRPC's codec reads each message into a buffer of the next
// pooled size up, 1 MiB for anything past 32 KiB, and keeps it in a
// sync.Pool: the full list of a busy node's containers every ResyncInterval
// keeps one or two of them alive for good (2.3 MiB of a 7.5 MiB live heap
// after 100 pods). Here a message is read into a buffer of its own size,
// garbage once decoded: a copy of a list every 10 s, not a megabyte kept.
type unpooledCodec struct{}

func (unpooledCodec) Name() string { return "proto" }

func (unpooledCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto: cannot marshal %T, not a proto.Message", v)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (unpooledCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("proto: cannot unmarshal into %T, not a proto.Message", v)
	}
	if len(data) == 1 {
		// A message in one frame: decoded in place (proto.Unmarshal
		// copies what it keeps), not copied first.
		return proto.Unmarshal(data[0].ReadOnlyData(), m)
	}
	return proto.Unmarshal(data.Materialize(), m)
}
