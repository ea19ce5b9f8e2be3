package rlheader

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"
)

// ietf parses RateLimit-Policy and RateLimit (and vendor-prefixed copies).
// Only one prefix is used: the un-prefixed fields if present, else the
// first prefix in name order; the others are reported as superseded.
func (ps *parser) ietf() {
	chosen, found := "", false
	for i := range ps.ents {
		e := &ps.ents[i]
		if e.kind != kIETF && e.kind != kIETFPolicy {
			continue
		}
		if !found || (e.rest == "" && chosen != "") {
			chosen, found = e.rest, true
		}
	}
	if !found {
		return
	}
	var polName, rlName string
	var polVals, rlVals []string
	for i := range ps.ents {
		e := &ps.ents[i]
		if e.kind != kIETF && e.kind != kIETFPolicy {
			continue
		}
		if e.rest != chosen {
			ps.ignore(e.name, strings.Join(e.vals, ", "), "superseded by the "+displayPrefix(chosen)+"RateLimit fields")
			continue
		}
		// A field may span several lines (and, in a map that was not
		// canonicalised, several keys): RFC 9651 §4.2 joins them with
		// commas, which UnmarshalList does.
		if e.kind == kIETFPolicy {
			if polName == "" {
				polName = e.name
			}
			polVals = appendLines(polVals, e.vals)
		} else {
			if rlName == "" {
				rlName = e.name
			}
			rlVals = appendLines(rlVals, e.vals)
		}
	}
	start := len(ps.pols)
	if polName != "" {
		ps.ietfPolicy(polName, polVals)
	}
	if rlName != "" {
		ps.ietfRateLimit(rlName, rlVals, start)
	}
}

func displayPrefix(p string) string {
	if p == "" {
		return ""
	}
	return strings.ToUpper(p[:1]) + p[1:]
}

func (ps *parser) ietfPolicy(name string, vals []string) {
	raw := joinedOnce(vals)
	l, err := httpsfv.UnmarshalList(vals)
	if err != nil {
		ps.ignore(name, raw(), "malformed structured field list: "+err.Error())
		return
	}
	for i, m := range l {
		it, ok := m.(httpsfv.Item)
		if !ok {
			ps.ignore(name, raw(), fmt.Sprintf("item %d: an inner list, want a policy item", i+1))
			continue
		}
		p := ipol{tier: tierIETF}
		p.Source = name
		quotaInValue := false
		switch v := it.Value.(type) {
		case string:
			p.Name = v
		case httpsfv.Token:
			p.Name = string(v)
		case int64:
			// Drafts up to -07: the item is the quota itself ("100;w=10").
			if v < 0 {
				ps.ignore(name, raw(), fmt.Sprintf("item %d: negative quota", i+1))
				continue
			}
			p.Quota, p.HasQuota, p.srcQuota, quotaInValue = v, true, name, true
		default:
			ps.ignore(name, raw(), fmt.Sprintf("item %d: policy name is not a string", i+1))
			continue
		}
		if reason := ps.policyParams(&p, it.Params, quotaInValue); reason != "" {
			ps.ignore(name, raw(), fmt.Sprintf("item %d: %s", i+1, reason))
			continue
		}
		if len(ps.pols) >= maxGroups {
			ps.ignore(name, raw(), fmt.Sprintf("item %d: %s", i+1, tooManyPolicies))
			continue
		}
		ps.addPolicy(p)
	}
}

// joinedOnce returns a function that joins a field's lines the first time
// it is called and returns that string after: a field of 20,000 bad items
// was joined once per item, 3.5 GB for a 400-KB head.
func joinedOnce(vals []string) func() string {
	var s string
	var done bool
	return func() string {
		if !done {
			s, done = strings.Join(vals, ", "), true
		}
		return s
	}
}

// policyParams reads q, qu, w and pk; a non-empty result is why the item is
// malformed.
func (ps *parser) policyParams(p *ipol, params *httpsfv.Params, quotaInValue bool) string {
	if params == nil {
		params = httpsfv.NewParams()
	}
	if q, ok := params.Get("q"); ok {
		n, isInt := q.(int64)
		if !isInt || n < 0 {
			return "q must be a non-negative integer"
		}
		p.Quota, p.HasQuota, p.srcQuota = n, true, p.Source
	} else if !quotaInValue {
		return "missing q (quota)"
	}
	if qu, ok := params.Get("qu"); ok {
		switch u := qu.(type) {
		case string:
			p.Unit = u
		case httpsfv.Token:
			p.Unit = string(u)
		default:
			return "qu must be a string"
		}
	}
	if w, ok := params.Get("w"); ok {
		n, isInt := w.(int64)
		if !isInt || n <= 0 {
			return "w must be a positive integer"
		}
		p.Window, p.srcWindow = secondsToDuration(float64(n)), p.Source
	}
	if pk, ok := params.Get("pk"); ok {
		b, isBytes := pk.([]byte)
		if !isBytes {
			return "pk must be a byte sequence"
		}
		p.Partition = b
	}
	return ""
}

// ietfRateLimit reads the RateLimit field: a List of items naming policies
// with r and t (draft -08 on), or draft-07's Dictionary
// limit=, remaining=, reset=. Items name policies declared from index
// start on; unmatched names become policies of their own.
func (ps *parser) ietfRateLimit(name string, vals []string, start int) {
	raw := joinedOnce(vals)
	l, err := httpsfv.UnmarshalList(vals)
	if err != nil {
		if ps.ietfDraft07(name, vals, start) {
			return
		}
		ps.ignore(name, raw(), "malformed structured field list: "+err.Error())
		return
	}
	for i, m := range l {
		it, ok := m.(httpsfv.Item)
		if !ok {
			ps.ignore(name, raw(), fmt.Sprintf("item %d: an inner list, want a policy item", i+1))
			continue
		}
		var pname string
		switch v := it.Value.(type) {
		case string:
			pname = v
		case httpsfv.Token:
			pname = string(v)
		default:
			ps.ignore(name, raw(), fmt.Sprintf("item %d: policy name is not a string", i+1))
			continue
		}
		params := it.Params
		if params == nil {
			params = httpsfv.NewParams()
		}
		rv, ok := params.Get("r")
		r, isInt := rv.(int64)
		if !ok || !isInt || r < 0 {
			ps.ignore(name, raw(), fmt.Sprintf("item %d: r (remaining) must be a non-negative integer", i+1))
			continue
		}
		var t int64 = -1
		if tv, ok := params.Get("t"); ok {
			n, isInt := tv.(int64)
			if !isInt || n < 0 {
				ps.ignore(name, raw(), fmt.Sprintf("item %d: t must be a non-negative integer", i+1))
				continue
			}
			t = n
		}
		var pk []byte
		if v, ok := params.Get("pk"); ok {
			b, isBytes := v.([]byte)
			if !isBytes {
				ps.ignore(name, raw(), fmt.Sprintf("item %d: pk must be a byte sequence", i+1))
				continue
			}
			pk = b
		}
		var p *ipol
		for j := start; j < len(ps.pols); j++ {
			if ps.pols[j].Name == pname && !ps.pols[j].HasRemaining {
				p = &ps.pols[j]
				break
			}
		}
		if p == nil && len(ps.pols) >= maxGroups {
			ps.ignore(name, raw(), fmt.Sprintf("item %d: %s", i+1, tooManyPolicies))
			continue
		}
		if p == nil {
			ps.addPolicy(ipol{tier: tierIETF})
			p = &ps.pols[len(ps.pols)-1]
			p.Name, p.Source = pname, name
		}
		p.Remaining, p.HasRemaining, p.srcRemain = r, true, name
		if d := secondsToDuration(float64(t)); t >= 0 && ps.plausibleReset(name, d, func() string { return "t=" + strconv.FormatInt(t, 10) }) {
			p.Reset, p.HasReset, p.srcReset = d, true, name
		}
		if pk != nil {
			p.Partition = pk
		}
	}
}

// ietfDraft07 reads draft-07's `RateLimit: limit=100, remaining=50, reset=5`.
// It reports whether the field had that form.
func (ps *parser) ietfDraft07(name string, vals []string, start int) bool {
	d, err := httpsfv.UnmarshalDictionary(vals)
	if err != nil {
		return false
	}
	p := ipol{tier: tierIETF}
	p.Source = name
	seen := false
	for _, k := range d.Names() {
		m, _ := d.Get(k)
		it, ok := m.(httpsfv.Item)
		var n int64
		if ok {
			n, ok = it.Value.(int64)
		}
		switch k {
		case "limit", "remaining", "reset":
		default:
			continue // unknown members are ignored, as the draft says
		}
		if !ok || n < 0 {
			ps.ignore(name, strings.Join(vals, ", "), k+" must be a non-negative integer")
			continue
		}
		seen = true
		switch k {
		case "limit":
			p.Quota, p.HasQuota, p.srcQuota = n, true, name
		case "remaining":
			p.Remaining, p.HasRemaining, p.srcRemain = n, true, name
		case "reset":
			if d := secondsToDuration(float64(n)); ps.plausibleReset(name, d, func() string { return "reset=" + strconv.FormatInt(n, 10) }) {
				p.Reset, p.HasReset, p.srcReset = d, true, name
			}
		}
	}
	if !seen {
		return false
	}
	// Draft-07 declared its policies as bare quotas ("100;w=10"); the
	// one whose quota equals limit is the one this field reports on.
	if p.HasQuota {
		for j := start; j < len(ps.pols); j++ {
			if q := &ps.pols[j]; q.Name == "" && q.HasQuota && q.Quota == p.Quota && !q.HasRemaining {
				q.Remaining, q.HasRemaining, q.srcRemain = p.Remaining, p.HasRemaining, p.srcRemain
				q.Reset, q.HasReset, q.srcReset = p.Reset, p.HasReset, p.srcReset
				return true
			}
		}
	}
	ps.addPolicy(p)
	return true
}
