package frontier

import (
	"errors"
	"strings"
	"testing"
)

// TestPrepared: a Prepared push holds only jobs that passed Prepare, with
// their defaults filled; a bad job is named by its index and changes
// nothing; Reset empties it.
func TestPrepared(t *testing.T) {
	p, err := PrepareBatch([]NewJob{{URL: "http://a.example/1"}, {URL: "ftp://a.example/"}})
	if !errors.Is(err, ErrInvalidURL) || !strings.Contains(err.Error(), "push job 1") || p.Len() != 0 {
		t.Fatalf("PrepareBatch(good, ftp) = %d jobs, %v; want none and an error naming job 1", p.Len(), err)
	}
	p, err = PrepareBatch([]NewJob{{URL: "http://A.example:80/1"}})
	if err != nil || p.Len() != 1 {
		t.Fatalf("PrepareBatch(good) = %d jobs, %v", p.Len(), err)
	}
	if err := p.Add(NewJob{URL: "http://a.example/2", Method: "B@D"}); !errors.Is(err, ErrInvalidJob) || p.Len() != 1 {
		t.Fatalf("Add(bad method) = %v, %d jobs; want ErrInvalidJob and 1 job", err, p.Len())
	}
	if err := p.Add(NewJob{URL: "http://a.example/2"}); err != nil || p.Len() != 2 {
		t.Fatalf("Add(good) = %v, %d jobs", err, p.Len())
	}
	if j := p.Jobs()[0]; j.Key != "http://a.example/1" || j.Host != "a.example" || j.Method != "GET" || j.State != Queued {
		t.Errorf("Jobs()[0] = %+v, want key http://a.example/1, host a.example, GET, queued", j)
	}
	if p = p.Reset(); p.Len() != 0 {
		t.Errorf("Reset() left %d jobs", p.Len())
	}
}
