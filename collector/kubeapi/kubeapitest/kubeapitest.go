// Package kubeapitest writes API server responses for tests that point a
// kubeapi.Client at an httptest server: core/v1, authentication/v1 and
// authorization/v1 objects and watch events in protobuf, framed as kube-apiserver frames them, and errors as JSON
// Statuses (what a proxy or an older server may send).
package kubeapitest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Media types of the protobuf responses.
const (
	Protobuf      = "application/vnd.kubernetes.protobuf"
	ProtobufWatch = Protobuf + ";stream=watch"
	// Accept is what a request that prefers protobuf and takes JSON sends.
	Accept = Protobuf + ",application/json"
)

// The server's own scheme: tests check the client against it, not against
// the client's registrations.
var (
	scheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		utilruntime.Must(corev1.AddToScheme(s))
		utilruntime.Must(authenticationv1.AddToScheme(s))
		utilruntime.Must(authorizationv1.AddToScheme(s))
		return s
	}()
	codecs = serializer.NewCodecFactory(scheme)
	// versions are the versions objects are sent in: each object's own.
	versions = schema.GroupVersions{corev1.SchemeGroupVersion, authenticationv1.SchemeGroupVersion, authorizationv1.SchemeGroupVersion}
)

func protobuf(t testing.TB) runtime.SerializerInfo {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), Protobuf)
	if !ok || info.StreamSerializer == nil {
		t.Fatal("no protobuf serializer")
	}
	return info
}

// Encode returns obj in protobuf in its group's version (apiVersion and
// kind set, as the API server sends it).
func Encode(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	b, err := runtime.Encode(codecs.EncoderForVersion(protobuf(t).Serializer, versions), obj)
	if err != nil {
		t.Fatalf("encoding %T: %v", obj, err)
	}
	return b
}

// Decode decodes a protobuf request body into into.
func Decode(t testing.TB, body []byte, into runtime.Object) {
	t.Helper()
	if _, _, err := protobuf(t).Serializer.Decode(body, nil, into); err != nil {
		t.Errorf("decoding %T: %v", into, err)
	}
}

// WriteObject answers with obj in protobuf.
func WriteObject(t testing.TB, w http.ResponseWriter, code int, obj runtime.Object) {
	t.Helper()
	w.Header().Set("Content-Type", Protobuf)
	w.WriteHeader(code)
	_, _ = w.Write(Encode(t, obj))
}

// Watch is the response stream of a watch.
type Watch struct {
	t   testing.TB
	w   http.ResponseWriter
	enc streaming.Encoder
}

// StartWatch answers a watch request: 200 and the protobuf stream's
// header, flushed so the client sees the watch open.
func StartWatch(t testing.TB, w http.ResponseWriter) *Watch {
	t.Helper()
	info := protobuf(t)
	w.Header().Set("Content-Type", ProtobufWatch)
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	return &Watch{t: t, w: w, enc: streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer)}
}

// Send writes one watch event, with obj encoded as the API server embeds
// it, and flushes it.
func (s *Watch) Send(typ watch.EventType, obj runtime.Object) {
	s.t.Helper()
	ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: Encode(s.t, obj)}}
	if err := s.enc.Encode(ev); err != nil {
		s.t.Errorf("writing watch event: %v", err)
		return
	}
	s.w.(http.Flusher).Flush()
}

// WriteStatus answers with an API error as a JSON Status.
func WriteStatus(t testing.TB, w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	t.Helper()
	var b bytes.Buffer
	st := metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reason, Message: message}
	if err := json.NewEncoder(&b).Encode(&st); err != nil {
		t.Fatal(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// Expired is the Status of a resourceVersion too old to watch from: 410
// Gone, reason Expired.
func Expired() *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
		Message: "too old resource version"}
}
