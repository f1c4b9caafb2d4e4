package km

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/survival"
)

// LogRankFromKM runs the log-rank test (overall, and for every pair of
// cohorts) on the post-processed at-risk and event counts of a private KM
// release. It is post-processing: it costs no privacy budget and carries the
// release's guarantee. A test that is undefined (fewer than two cohorts with
// expected events, e.g. after truncation) has P = NaN; a singular variance
// matrix is an error.
func LogRankFromKM(res KMResult) (survival.LogRank, []survival.Pairwise, error) {
	k := len(res.Cohorts)
	if k < 2 {
		return survival.LogRank{}, nil, fmt.Errorf("log-rank from km: need at least 2 cohorts, got %d", k)
	}
	nRisk := make([][]float64, k)
	nEvent := make([][]float64, k)
	for c, ck := range res.Cohorts {
		if len(ck.BinNRisk) == 0 || len(ck.BinNRisk) != len(res.Cohorts[0].BinNRisk) || len(ck.BinNEvent) != len(ck.BinNRisk) {
			return survival.LogRank{}, nil, fmt.Errorf("log-rank from km: cohort %d has no counts on the common bin grid", c)
		}
		nRisk[c], nEvent[c] = ck.BinNRisk, ck.BinNEvent
	}
	lr, err := survival.LogRankFromCounts(nRisk, nEvent)
	if err != nil {
		return survival.LogRank{}, nil, fmt.Errorf("log-rank from km: %w", err)
	}
	pw, err := survival.PairwiseLogRankFromCounts(nRisk, nEvent)
	if err != nil {
		return survival.LogRank{}, nil, fmt.Errorf("log-rank from km: %w", err)
	}
	return lr, pw, nil
}

// attachLogRank fills res.LogRank and res.Pairwise from its cohorts (two or
// more). A failed test leaves NaN and a note: the curves stand on their own.
func attachLogRank(res *KMResult) {
	k := len(res.Cohorts)
	if k < 2 {
		return
	}
	lr, pw, err := LogRankFromKM(*res)
	if err != nil {
		res.LogRank = survival.LogRank{ChiSq: math.NaN(), P: math.NaN(), DF: k - 1}
		res.Pairwise = nil
		res.LogRankNote = err.Error()
		return
	}
	res.LogRank, res.Pairwise = lr, pw
}
