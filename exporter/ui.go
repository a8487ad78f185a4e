package exporter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
	"github.com/readyline/readyline/exporter/waterfall"
)

// UIContentSecurityPolicy is the Content-Security-Policy of the UI's
// pages: they run no script and load nothing, their styles and SVG are
// inline.
const UIContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// maxReasonRunes cuts a failure's reason in the list (its page has all of it).
const maxReasonRunes = 120

// UIHandler serves the stored pod starts as pages for a browser:
//
//	GET /ui/                            the pod starts, newest first, each linking to its waterfall
//	GET /ui/pods/{namespace}/{name}     the waterfall of the latest start of that pod, or 404
//	GET /ui/uid/{uid}                   the waterfall of the start of the pod with that UID (its trace id), or 404
//
// The pages need no script and load nothing (UIContentSecurityPolicy);
// their links are relative, so they work behind a proxy that serves them
// under another path (kubectl port-forward, kubectl proxy). logger (may be
// nil) gets a Debug line per request that fails.
func (s *Store) UIHandler(logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ui/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.listView(r.Context(), podReaderOf(r))
		if err != nil {
			refused(w, logger, "./", "the pods you may read", err)
			return
		}
		writePage(w, logger, http.StatusOK, "list", func(p *htmlWriter) { writeListPage(p, &v) })
	})
	mux.HandleFunc("GET /ui/pods/{namespace}/{name}", func(w http.ResponseWriter, r *http.Request) {
		ns, name := r.PathValue("namespace"), r.PathValue("name")
		if err := podReaderOf(r).MayRead(ns, name); err != nil {
			refused(w, logger, "../../", ns+"/"+name, err)
			return
		}
		tl, err := s.Find(r.Context(), ns, name, "")
		if err != nil {
			logger.Debug("no timeline for pod", "namespace", ns, "pod", name, "error", err)
			v := notFoundView{Back: "../../", What: cut(ns+"/"+name, maxHeadingRunes), Why: s.notFoundWhy(err)}
			writePage(w, logger, http.StatusNotFound, "not found", func(p *htmlWriter) { writeNotFoundPage(p, &v) })
			return
		}
		api := "../../../api/v1/timelines/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
		v := newPodView(ReaderView(podReaderOf(r), tl), "../../", api)
		writePage(w, logger, http.StatusOK, "pod", func(p *htmlWriter) { writePodPage(p, &v) })
	})
	mux.HandleFunc("GET /ui/uid/{uid}", func(w http.ResponseWriter, r *http.Request) {
		uid := r.PathValue("uid")
		tl, ok := s.GetUID(uid)
		// A start the user may not read is not here, as for a UID unknown.
		if ok && podReaderOf(r).MayRead(tl.Pod.Namespace, tl.Pod.Name) != nil {
			ok = false
		}
		if !ok {
			logger.Debug("no timeline for pod uid", "uid", uid)
			v := notFoundView{Back: "../", What: cut("uid "+uid, maxHeadingRunes), Why: s.notFoundWhy(apiclient.ErrNotFound)}
			writePage(w, logger, http.StatusNotFound, "not found", func(p *htmlWriter) { writeNotFoundPage(p, &v) })
			return
		}
		v := newPodView(ReaderView(podReaderOf(r), tl), "../", "")
		writePage(w, logger, http.StatusOK, "pod", func(p *htmlWriter) { writePodPage(p, &v) })
	})
	return mux
}

func (s *Store) notFoundWhy(err error) string {
	if !errors.Is(err, apiclient.ErrNotFound) {
		return err.Error()
	}
	return fmt.Sprintf("This daemon shows the pod starts in progress on its node and keeps the last %d that ended (at most %d MiB of them): "+
		"a pod of another node, or one started long ago, is not here.",
		s.limits.Timelines, s.limits.Bytes>>20)
}

// refused answers a request for what (a pod, "all pod starts") that the
// request's PodReader refused, or could not tell, with the page that says
// why; back is the link to the list.
func refused(w http.ResponseWriter, logger *slog.Logger, back, what string, err error) {
	logger.Debug("refused a page", "what", what, "error", err)
	why := "You may not read it: readyline shows the start of a pod to whom may get that pod (" + err.Error() + ")."
	status := accessStatus(err)
	if status != http.StatusForbidden {
		why = "readyline could not tell whether you may read it: " + err.Error()
	}
	v := notFoundView{Back: back, What: cut(what, maxHeadingRunes), Why: why}
	writePage(w, logger, status, "refused", func(p *htmlWriter) { writeNotFoundPage(p, &v) })
}

// notFoundView is what the 404 page shows (writeNotFoundPage).
type notFoundView struct {
	Back string
	What shortText
	Why  string
}

// listView is what the list of pod starts shows (writeListPage).
type listView struct {
	Limit  int
	Starts []startView
}

// startView is one pod start of the list.
type startView struct {
	Pod     shortText
	Href    string
	UID     string
	Outcome correlator.Outcome
	Result  string // the CSS class: the outcome, or partial
	Took    string
	Created string
	Reason  shortText
}

// listView lists the starts pr may read, those in progress first, then
// the stored ones by creation, newest first. A stored start links to its
// pod's page when it is the start that page shows (the latest of that
// name), else to its UID's page.
func (s *Store) listView(ctx context.Context, pr PodReader) (listView, error) {
	starting, _ := s.inProgress(ctx, false)
	starting, err := readable(pr, starting, func(st apiclient.TimelineSummary) (string, string) { return st.Namespace, st.Name })
	if err != nil {
		return listView{}, err
	}
	s.mu.RLock()
	tls := make([]*correlator.Timeline, 0, s.order.Len())
	for el := s.order.Back(); el != nil; el = el.Prev() {
		tls = append(tls, timelineAt(el))
	}
	latest := make(map[string]string, len(s.byName))
	for name, uid := range s.byName {
		latest[name] = uid
	}
	s.mu.RUnlock()
	tls, err = readable(pr, tls, func(tl *correlator.Timeline) (string, string) { return tl.Pod.Namespace, tl.Pod.Name })
	if err != nil {
		return listView{}, err
	}
	slices.SortStableFunc(tls, func(a, b *correlator.Timeline) int { return cmp.Compare(b.Start.UnixNano(), a.Start.UnixNano()) })
	v := listView{Limit: s.limits.Timelines, Starts: make([]startView, 0, len(starting)+len(tls))}
	live := make(map[string]bool, len(starting))
	for _, st := range starting {
		live[st.UID] = true
		v.Starts = append(v.Starts, startView{
			Pod: cut(st.Namespace+"/"+st.Name, maxHeadingRunes), Href: "pods/" + url.PathEscape(st.Namespace) + "/" + url.PathEscape(st.Name),
			UID: st.UID, Outcome: st.Outcome, Result: string(st.Outcome), Took: waterfall.FormatSeconds(st.End.Sub(st.Start)),
			Created: st.Start.UTC().Format(time.RFC3339),
		})
	}
	for _, tl := range tls {
		if live[tl.Pod.UID] {
			continue
		}
		href := "uid/" + url.PathEscape(tl.Pod.UID)
		if latest[tl.Pod.String()] == tl.Pod.UID {
			href = "pods/" + url.PathEscape(tl.Pod.Namespace) + "/" + url.PathEscape(tl.Pod.Name)
		}
		sv := startView{
			Pod: cut(tl.Pod.String(), maxHeadingRunes), Href: href, UID: tl.Pod.UID,
			Outcome: tl.Outcome, Result: string(tl.Outcome), Reason: cut(tl.Reason, maxReasonRunes),
		}
		if tl.Partial {
			sv.Result = "partial"
		}
		if d, ok := between(tl.Start, tl.End); ok {
			sv.Took = waterfall.FormatSeconds(d)
		}
		if !tl.Start.IsZero() {
			sv.Created = tl.Start.UTC().Format(time.RFC3339)
		}
		v.Starts = append(v.Starts, sv)
	}
	return v, nil
}

// writePage writes the page render builds, with the headers of the UI's
// pages: all of it at once, after the headers (render cannot fail).
func writePage(w http.ResponseWriter, logger *slog.Logger, status int, page string, render func(*htmlWriter)) {
	var p htmlWriter
	render(&p)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", UIContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	if _, err := w.Write(p.b); err != nil {
		logger.Debug("writing page", "page", page, "error", err)
	}
}
