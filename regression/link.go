package regression

import (
	"fmt"
	"math"
)

// Link is the link function g of the discrete-time hazard:
// g(h(s | x)) = alpha'A_s + beta'x.
type Link string

// The supported links. Ext-Out-Pert and Ext-Obj-Pert accept logit and
// cloglog (the latter through the bounded-influence loss of
// cloglog_huber.go, as does pSGLD); the MLE, newton and pSGLD accept all
// three.
const (
	LinkLogit   Link = "logit"
	LinkCloglog Link = "cloglog"
	LinkProbit  Link = "probit"
)

func (l Link) validate() error {
	switch l {
	case LinkLogit, LinkCloglog, LinkProbit:
		return nil
	}
	return fmt.Errorf("unknown link %q (want logit, cloglog or probit)", string(l))
}

// pair returns, for one person-period row with linear predictor z and
// outcome y (event in this interval or not), the negative log-likelihood
// and its first and second derivatives in z.
func (l Link) pair(z float64, y bool) (loss, g, h float64) {
	switch l {
	case LinkCloglog:
		return cloglogPair(z, y)
	case linkCloglogHuber:
		return cloglogHuberPair(z, y)
	case LinkProbit:
		return probitPair(z, y)
	default:
		return logitPair(z, y)
	}
}

// gh is pair's g and h (the same bits) without the loss, for the sums
// that use only the derivatives (noisy Newton's clipped sums): the loss's
// logarithm is not computed.
func (l Link) gh(z float64, y bool) (g, h float64) {
	switch l {
	case LinkCloglog:
		_, g, h = cloglogTerms(z, y, false)
	case linkCloglogHuber:
		_, g, h = cloglogHuberPair(z, y)
	case LinkProbit:
		_, g, h = probitTerms(z, y, false)
	default:
		g, h = logitGH(z, y)
	}
	return g, h
}

func logitPair(z float64, y bool) (loss, g, h float64) {
	p, q, e := sigmoids(z)
	// log1pExp(z), its exponential shared where it is e (z < 0, or
	// exp(-z) for z > 35): the same bits
	switch {
	case z > 35:
		loss = z + e
	case z < -35:
		loss = e
	case z < 0:
		loss = math.Log1p(e)
	default:
		loss = math.Log1p(math.Exp(z))
	}
	if y {
		loss -= z
	}
	g, h = logitDerivs(z, y, p, q)
	return loss, g, h
}

// logitGH is logitPair's g and h.
func logitGH(z float64, y bool) (g, h float64) {
	p, q, _ := sigmoids(z)
	return logitDerivs(z, y, p, q)
}

// sigmoids returns sigmoid(z), sigmoid(-z) and e = exp(-|z|), the one
// exponential sigmoid takes for either of them (so they are sigmoid's
// bits).
func sigmoids(z float64) (p, q, e float64) {
	if z >= 0 {
		e = math.Exp(-z)
		return 1 / (1 + e), e / (1 + e), e
	}
	e = math.Exp(z)
	return e / (1 + e), 1 / (1 + e), e
}

// logitDerivs is logitPair's g and h from p = sigmoid(z) and q =
// sigmoid(-z): h = p q, g = p (survival) or p - 1 (event; -q for z < 0).
func logitDerivs(z float64, y bool, p, q float64) (g, h float64) {
	h = p * q
	g = p
	if y {
		g = p - 1
		if z < 0 {
			g = -q
		}
	}
	return g, h
}

// cloglogPair: h(z) = 1 - exp(-exp(z)). With m = exp(z): survival rows
// contribute m (with derivatives m, m); event rows -log(1 - exp(-m)).
func cloglogPair(z float64, y bool) (loss, g, h float64) {
	return cloglogTerms(z, y, true)
}

// cloglogTerms is cloglogPair; without wantLoss an event row's loss (a
// logarithm) is not computed and is 0.
func cloglogTerms(z float64, y, wantLoss bool) (loss, g, h float64) {
	m := math.Exp(z)
	if !y {
		return m, m, m
	}
	em1 := -math.Expm1(-m) // 1 - exp(-m), in (0, 1]
	if em1 == 0 {          // m underflowed to zero
		return -z, -1, 0
	}
	if wantLoss {
		loss = -math.Log(em1)
	}
	// g = -m exp(-m) / (1 - exp(-m)) = -m / expm1(m)
	ex := math.Exp(-m)
	g = -m * ex / em1
	// h = m exp(-m) (m - (1 - exp(-m))) / (1 - exp(-m))^2
	var num float64
	if m < 1e-3 {
		// m - (1 - e^-m) = m^2/2 - m^3/6 + m^4/24 - ...
		num = m * m * (0.5 - m/6 + m*m/24)
	} else {
		num = m - em1
	}
	h = m * ex * num / (em1 * em1)
	return loss, g, h
}

const invSqrt2Pi = 0.3989422804014327 // 1/sqrt(2 pi)

// normCDF is Phi(z).
func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// millsLog returns log Phi(z) (0 unless wantLog) and lambda(z) =
// phi(z)/Phi(z), stable for very negative z (asymptotic series below -30).
func millsLog(z float64, wantLog bool) (logPhi, lambda float64) {
	if z > -30 {
		p := normCDF(z)
		if wantLog {
			logPhi = math.Log(p)
		}
		return logPhi, invSqrt2Pi * math.Exp(-0.5*z*z) / p
	}
	z2 := z * z
	s := 1 - 1/z2 + 3/(z2*z2) - 15/(z2*z2*z2) + 105/(z2*z2*z2*z2)
	if wantLog {
		logPhi = -0.5*z2 - math.Log(-z) + math.Log(invSqrt2Pi) + math.Log(s)
	}
	return logPhi, -z / s
}

// probitPair: h(z) = Phi(z).
func probitPair(z float64, y bool) (loss, g, h float64) {
	return probitTerms(z, y, true)
}

// probitTerms is probitPair; without wantLoss the loss (log Phi) is not
// computed and is 0.
func probitTerms(z float64, y, wantLoss bool) (loss, g, h float64) {
	if y {
		lp, lam := millsLog(z, wantLoss)
		return -lp, -lam, lam * (z + lam)
	}
	lp, lam := millsLog(-z, wantLoss)
	return -lp, lam, lam * (lam - z)
}
