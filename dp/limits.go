package dp

// The samplers' limits: the largest noise scale DiscreteLaplace draws
// exactly (its rational form s/2^30 must stay far inside uint64), and the
// largest exponent RationalDown writes for BernoulliExp. A mechanism that
// asks for more fails, and its release is withheld: configuration that
// would ask for more is refused up front (aggregators.MinEpsilon,
// aggregators.MaxEpsilon).
const (
	MaxNoiseScale = 1 << 32
	MaxRational   = 1 << 32
)
