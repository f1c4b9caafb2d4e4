package weibull

// pooledChiSquare is Pearson's chi-square statistic of observed against
// expected cell counts, with the cells expected below 5 pooled into one
// cell (counted when its expectation is positive; an expectation below 1
// counts as 1, so that one stray draw in a far tail cannot dominate), and
// the number of cells it summed: the statistic has cells-1 degrees of
// freedom.
func pooledChiSquare(obs, exp []float64) (chi float64, cells int) {
	var po, pe float64
	for i, e := range exp {
		if e < 5 {
			pe += e
			po += obs[i]
			continue
		}
		chi += (obs[i] - e) * (obs[i] - e) / e
		cells++
	}
	if pe > 0 {
		chi += (po - pe) * (po - pe) / max(pe, 1)
		cells++
	}
	return chi, cells
}
