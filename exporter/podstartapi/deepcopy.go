package podstartapi

import "k8s.io/apimachinery/pkg/runtime"

// DeepCopyInto copies s into out.
func (s *PodStart) DeepCopyInto(out *PodStart) {
	*out = *s
	out.TypeMeta = s.TypeMeta
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	s.Status.StartTime.DeepCopyInto(&out.Status.StartTime)
	if s.Status.EndTime != nil {
		out.Status.EndTime = s.Status.EndTime.DeepCopy()
	}
	if s.Status.Timeline != nil {
		out.Status.Timeline = s.Status.Timeline.DeepCopy()
	}
}

// DeepCopy returns a copy of s.
func (s *PodStart) DeepCopy() *PodStart {
	if s == nil {
		return nil
	}
	out := new(PodStart)
	s.DeepCopyInto(out)
	return out
}

// DeepCopyObject is runtime.Object's.
func (s *PodStart) DeepCopyObject() runtime.Object { return s.DeepCopy() }

// DeepCopyInto copies l into out.
func (l *PodStartList) DeepCopyInto(out *PodStartList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]PodStart, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of l.
func (l *PodStartList) DeepCopy() *PodStartList {
	if l == nil {
		return nil
	}
	out := new(PodStartList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject is runtime.Object's.
func (l *PodStartList) DeepCopyObject() runtime.Object { return l.DeepCopy() }

// DeepCopyObject copies o (it holds no reference).
func (o *PodStartWebOptions) DeepCopyObject() runtime.Object {
	if o == nil {
		return nil
	}
	cp := *o
	return &cp
}
