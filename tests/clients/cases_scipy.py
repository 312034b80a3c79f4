"""scipy's public functions that support the Array API (SCIPY_ARRAY_API=1), on Variables.

Every function of ``scipy.special``'s Array API set is here (logsumexp, softmax,
log_softmax, and the 92 elementwise functions, of which all but xlogy and rel_entr fall
back to numpy for a namespace scipy does not know: right values, no gradient), and a
selection of scipy.stats, scipy.signal, scipy.fft, scipy.integrate, scipy.ndimage,
scipy.linalg, scipy.optimize and scipy.cluster.
"""

from __future__ import annotations

import numpy as np

from clients.harness import Case, Lazy, normal, positive, uniform

REQUIRES = ("scipy",)

special = Lazy("scipy.special")
stats = Lazy("scipy.stats")
signal = Lazy("scipy.signal")
fft = Lazy("scipy.fft")
integrate = Lazy("scipy.integrate")
ndimage = Lazy("scipy.ndimage")
linalg = Lazy("scipy.linalg")
optimize = Lazy("scipy.optimize")
vq = Lazy("scipy.cluster.vq")

X = normal(5)
X2 = normal(3, 4, seed=1)
P = positive(5, seed=2)
P2 = positive(3, 4, seed=3)
U = uniform(5, seed=4)
K = np.array([0, 1, 2, 3, 4])  # integer orders

CASES: list[Case] = []


def case(name, fn, *args, **kw):
    CASES.append(Case("scipy." + name, fn, args, **kw))


# ---------------------------------------------------------------------------
# scipy.special: logsumexp and friends (written against the standard)
# ---------------------------------------------------------------------------
case("special.logsumexp", lambda x: special.logsumexp(x), X)
case("special.logsumexp(axis=1)", lambda x: special.logsumexp(x, axis=1), X2)
case("special.logsumexp(keepdims)", lambda x: special.logsumexp(x, axis=0, keepdims=True), X2)
case("special.logsumexp(b=)", lambda x, b: special.logsumexp(x, b=b), X, P)
case("special.logsumexp(b=, axis=0)", lambda x, b: special.logsumexp(x, b=b, axis=0), X2, P2)
case("special.logsumexp(return_sign)", lambda x, b: special.logsumexp(x, b=b, return_sign=True), X, P)
case("special.softmax", lambda x: special.softmax(x), X)
case("special.softmax(axis=1)", lambda x: special.softmax(x, axis=1), X2)
case("special.log_softmax", lambda x: special.log_softmax(x), X)
case("special.log_softmax(axis=0)", lambda x: special.log_softmax(x, axis=0), X2)

# ---------------------------------------------------------------------------
# scipy.special: elementwise functions. xlogy and rel_entr have a generic implementation;
# the others fall back to numpy (np.asarray of the arguments, xp.asarray of the result).
# ---------------------------------------------------------------------------
case("special.xlogy", lambda x, y: special.xlogy(x, y), X, P)
case("special.rel_entr", lambda x, y: special.rel_entr(x, y), P, P[::-1].copy())
_ELEMENTWISE_1 = {  # name: input
    "entr": P, "erf": X, "erfc": X, "erfcx": X, "erfinv": U * 2 - 1, "expit": X, "logit": U, "ndtr": X,
    "ndtri": U, "log_ndtr": X, "gammaln": P, "gamma": P, "rgamma": P, "loggamma": P, "gammasgn": X,
    "digamma": P, "psi": P, "i0": X, "i0e": X, "i1": X, "i1e": X, "k0": P, "k0e": P, "k1": P, "k1e": P,
    "j0": X, "j1": X, "y0": P, "y1": P, "cbrt": X, "exp2": X, "exp10": X, "expm1": X, "log1p": P,
    "exprel": X, "sinc": X, "expi": P, "exp1": P, "spence": P, "zetac": P + 1, "cosm1": X, "sindg": X * 30,
    "cosdg": X * 30, "tandg": X * 30, "cotdg": X * 30 + 100, "ellipk": U, "ellipkm1": U,
}
for _name, _x in _ELEMENTWISE_1.items():
    case(f"special.{_name}", lambda x, _n=_name: getattr(special, _n)(x), _x, expect="refused")
_ELEMENTWISE_2 = {  # name: inputs (orders that must be integers are int arrays)
    "xlog1py": (X, P), "kl_div": (P, P[::-1].copy()), "huber": (P, X), "pseudo_huber": (P, X),
    "gammainc": (P, P[::-1].copy()), "gammaincc": (P, P[::-1].copy()), "gammaincinv": (P, U),
    "gammainccinv": (P, U), "betaln": (P, P[::-1].copy()), "binom": (P + 3, P), "poch": (P, U),
    "beta": (P, P[::-1].copy()), "boxcox": (P, X), "boxcox1p": (P, X), "inv_boxcox": (P, U),
    "inv_boxcox1p": (P, U), "chdtr": (P, P[::-1].copy()), "chdtrc": (P, P[::-1].copy()),
    "chdtri": (P, U), "stdtr": (P, X), "stdtrit": (P, U), "pdtr": (K, P), "pdtrc": (K, P),
    "pdtri": (K, U), "zeta": (P + 1, P), "polygamma": (K, P), "expn": (K, P), "yn": (K, P),
    "multigammaln": (P + 3, 2),
}
for _name, _args in _ELEMENTWISE_2.items():
    case(f"special.{_name}", lambda *a, _n=_name: getattr(special, _n)(*a), *_args, expect="refused")
_ELEMENTWISE_3 = {
    "betainc": (P, P[::-1].copy(), U), "betaincc": (P, P[::-1].copy(), U), "betaincinv": (P, P[::-1].copy(), U),
    "fdtr": (P, P[::-1].copy(), P), "fdtrc": (P, P[::-1].copy(), P), "fdtri": (P, P[::-1].copy(), U),
    "gdtr": (P, P[::-1].copy(), P), "gdtrc": (P, P[::-1].copy(), P), "hyp1f1": (U, P, X),
    "bdtr": (K, K + 5, U), "bdtrc": (K, K + 5, U), "bdtri": (K, K + 5, U), "nbdtr": (K, K + 5, U),
    "nbdtrc": (K, K + 5, U), "nbdtri": (K, K + 5, U), "lpmv": (K * 0, K, U),
}
_ELEMENTWISE_3["radian"] = (X * 30, X * 10, X)
for _name, _args in _ELEMENTWISE_3.items():
    case(f"special.{_name}", lambda *a, _n=_name: getattr(special, _n)(*a), *_args, expect="refused")

# ---------------------------------------------------------------------------
# scipy.stats
# ---------------------------------------------------------------------------
S = normal(8, seed=6)
S2 = normal(8, seed=7)
S3 = normal(3, 6, seed=8)
SP = positive(8, seed=9)
for _name in ("skew", "kurtosis", "sem", "zscore", "gzscore", "variation", "gmean", "hmean", "gstd", "tmean", "tvar",
              "tstd", "tsem", "kstat", "kstatvar", "circmean", "circvar", "circstd", "differential_entropy",
              "entropy", "jarque_bera", "describe", "tmin", "tmax", "iqr", "median_abs_deviation", "trim_mean",
              "mode", "rankdata", "skewtest", "normaltest", "sigmaclip"):
    _x = SP if _name in ("gmean", "hmean", "gstd", "variation", "gzscore", "entropy") else S
    _extra = {"trim_mean": (0.1,)}.get(_name, ())
    case(f"stats.{_name}", lambda x, *e, _n=_name: getattr(stats, _n)(x, *e), _x, *_extra)
case("stats.skew(axis=1)", lambda x: stats.skew(x, axis=1), S3)
case("stats.kurtosis(fisher=False, bias=False)", lambda x: stats.kurtosis(x, fisher=False, bias=False), S)
case("stats.moment(3)", lambda x: stats.moment(x, 3), S)
case("stats.moment(4, center=0)", lambda x: stats.moment(x, 4, center=0.0), S)
case("stats.moment([2, 3])", lambda x: stats.moment(x, [2, 3]), S)
case("stats.pmean(p=1.5)", lambda x: stats.pmean(x, 1.5), SP)
case("stats.zmap", lambda x, y: stats.zmap(x, y), S, S2)
case("stats.ttest_1samp", lambda x: stats.ttest_1samp(x, 0.1), S)
case("stats.ttest_ind", lambda x, y: stats.ttest_ind(x, y), S, S2)
case("stats.ttest_rel", lambda x, y: stats.ttest_rel(x, y), S, S2)
case("stats.pearsonr", lambda x, y: stats.pearsonr(x, y), S, S2)
case("stats.chisquare", lambda x: stats.chisquare(x), SP)
case("stats.power_divergence", lambda x: stats.power_divergence(x, lambda_="cressie-read"), SP)
case("stats.boxcox_llf", lambda x: stats.boxcox_llf(0.5, x), SP)
case("stats.yeojohnson_llf", lambda x: stats.yeojohnson_llf(0.5, x), S)
case("stats.bartlett", lambda x, y: stats.bartlett(x, y), S, S2)
case("stats.levene", lambda x, y: stats.levene(x, y), S, S2)
case("stats.f_oneway", lambda x, y: stats.f_oneway(x, y), S, S2)
case("stats.quantile", lambda x: stats.quantile(x, 0.3), S)
case("stats.directional_stats", lambda x: stats.directional_stats(x), S3.T.copy())
case("stats.false_discovery_control", lambda p: stats.false_discovery_control(p), U)
case("stats.combine_pvalues", lambda p: stats.combine_pvalues(p), U)

# ---------------------------------------------------------------------------
# scipy.signal
# ---------------------------------------------------------------------------
A = normal(7, seed=10)
B = normal(4, seed=11)
A2 = normal(5, 6, seed=12)
B2 = normal(2, 3, seed=13)
for _name in ("convolve", "correlate", "fftconvolve", "oaconvolve"):
    case(f"signal.{_name}", lambda a, b, _n=_name: getattr(signal, _n)(a, b), A, B)
    case(f"signal.{_name}(mode='same')", lambda a, b, _n=_name: getattr(signal, _n)(a, b, mode="same"), A, B)
    case(f"signal.{_name}(2-d)", lambda a, b, _n=_name: getattr(signal, _n)(a, b), A2, B2)
case("signal.convolve2d", lambda a, b: signal.convolve2d(a, b), A2, B2)
case("signal.correlate2d", lambda a, b: signal.correlate2d(a, b), A2, B2)
case("signal.lfilter", lambda b, a, x: signal.lfilter(b, a, x), np.array([0.5, 0.3]), np.array([1.0, -0.2]), A)
case("signal.sosfilt", lambda sos, x: signal.sosfilt(sos, x), np.array([[0.5, 0.3, 0.0, 1.0, -0.2, 0.0]]), A,
     diff=(1,))  # sos[:, 3] must stay 1
case("signal.filtfilt", lambda b, a, x: signal.filtfilt(b, a, x, padlen=2), np.array([0.5, 0.3]),
     np.array([1.0, -0.2]), A)
case("signal.detrend", lambda x: signal.detrend(x), A)
case("signal.detrend(constant)", lambda x: signal.detrend(x, type="constant"), A)
case("signal.hilbert", lambda x: signal.hilbert(x), A)
case("signal.resample", lambda x: signal.resample(x, 10), A)
case("signal.resample_poly", lambda x: signal.resample_poly(x, 3, 2), A)
case("signal.decimate", lambda x: signal.decimate(x, 2, n=2, ftype="fir"), normal(12, seed=24))
case("signal.welch", lambda x: signal.welch(x, nperseg=4), normal(16, seed=14))
case("signal.periodogram", lambda x: signal.periodogram(x), normal(16, seed=14))
case("signal.csd", lambda x, y: signal.csd(x, y, nperseg=4), normal(16, seed=14), normal(16, seed=15))
case("signal.coherence", lambda x, y: signal.coherence(x, y, nperseg=4), normal(16, seed=14), normal(16, seed=15))
case("signal.upfirdn", lambda h, x: signal.upfirdn(h, x, 2, 1), np.array([1.0, 0.5]), A)
case("signal.savgol_filter", lambda x: signal.savgol_filter(x, 5, 2), A)
case("signal.medfilt", lambda x: signal.medfilt(x, 3), A)
case("signal.wiener", lambda x: signal.wiener(x, 3), A)
case("signal.freqz", lambda b: signal.freqz(b, worN=8), np.array([0.5, 0.3, 0.2]))
case("signal.czt", lambda x: signal.czt(x), A)
case("signal.zoom_fft", lambda x: signal.zoom_fft(x, [0.1, 0.4]), A)

# ---------------------------------------------------------------------------
# scipy.fft
# ---------------------------------------------------------------------------
F = normal(6, seed=16)
F2 = normal(4, 6, seed=17)
for _name in ("fft", "ifft", "rfft", "hfft", "ihfft", "dct", "idct", "dst", "idst"):
    case(f"fft.{_name}", lambda x, _n=_name: getattr(fft, _n)(x), F)
case("fft.irfft", lambda x: fft.irfft(x), F)
case("fft.fft(n=8, norm=ortho)", lambda x: fft.fft(x, n=8, norm="ortho"), F)
for _name in ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "rfftn", "irfft2", "irfftn", "hfft2", "ihfft2", "dctn",
              "idctn", "dstn", "idstn"):
    case(f"fft.{_name}", lambda x, _n=_name: getattr(fft, _n)(x), F2)
case("fft.fftshift", lambda x: fft.fftshift(x), F)
case("fft.ifftshift", lambda x: fft.ifftshift(x), F2)
case("fft.fht", lambda x: fft.fht(x, dln=0.1, mu=0.5), F)
case("fft.dct(type=1)", lambda x: fft.dct(x, type=1), F)
case("fft.dst(type=4, norm=ortho)", lambda x: fft.dst(x, type=4, norm="ortho"), F)

# ---------------------------------------------------------------------------
# scipy.integrate, ndimage, linalg, optimize, cluster
# ---------------------------------------------------------------------------
Y = normal(9, seed=18)
case("integrate.trapezoid", lambda y: integrate.trapezoid(y), Y)
case("integrate.trapezoid(x=)", lambda y, x: integrate.trapezoid(y, x=x), Y, np.cumsum(positive(9, seed=19)))
case("integrate.cumulative_trapezoid", lambda y: integrate.cumulative_trapezoid(y, initial=0), Y)
case("integrate.simpson", lambda y: integrate.simpson(y), Y)
case("integrate.cumulative_simpson", lambda y: integrate.cumulative_simpson(y), Y)
case("integrate.romb", lambda y: integrate.romb(y), Y)
I2 = normal(5, 5, seed=20)
for _name in ("gaussian_filter", "uniform_filter", "laplace", "sobel", "prewitt", "median_filter", "maximum_filter"):
    _kw = {"gaussian_filter": {"sigma": 1.0}, "uniform_filter": {"size": 3}, "median_filter": {"size": 3},
           "maximum_filter": {"size": 3}}.get(_name, {})
    case(f"ndimage.{_name}", lambda x, _n=_name, _k=_kw: getattr(ndimage, _n)(x, **_k), I2)
case("ndimage.convolve", lambda x, w: ndimage.convolve(x, w), I2, normal(3, 3, seed=21))
case("ndimage.shift", lambda x: ndimage.shift(x, 0.5, order=1), I2)
case("ndimage.zoom", lambda x: ndimage.zoom(x, 1.4, order=1), I2)
case("ndimage.sum_labels", lambda x, lab: ndimage.sum_labels(x, lab, index=[1, 2]), I2,
     (np.arange(25).reshape(5, 5) % 3))
case("ndimage.mean", lambda x: ndimage.mean(x), I2)
case("linalg.block_diag", lambda a, b: linalg.block_diag(a, b), X2, B2)
case("linalg.orthogonal_procrustes", lambda a, b: linalg.orthogonal_procrustes(a, b)[1], X2, normal(3, 4, seed=22))
case("optimize.rosen", lambda x: optimize.rosen(x), X)
case("optimize.rosen_der", lambda x: optimize.rosen_der(x), X)
case("optimize.rosen_hess", lambda x: optimize.rosen_hess(x), X)
case("optimize.rosen_hess_prod", lambda x, p: optimize.rosen_hess_prod(x, p), X, normal(5, seed=23))
case("cluster.vq.whiten", lambda x: vq.whiten(x), X2)
case("cluster.vq.vq", lambda x, c: vq.vq(x, c), X2, X2[:2].copy(), diff=())

# The statistic alone of the tests above (their p-values come from special functions that
# fall back to numpy).
_STAT = [("jarque_bera", (S,)), ("skewtest", (S,)), ("normaltest", (S,)), ("ttest_ind", (S, S2)),
         ("ttest_rel", (S, S2)), ("pearsonr", (S, S2)), ("chisquare", (SP,)), ("bartlett", (S, S2)),
         ("levene", (S, S2)), ("f_oneway", (S, S2)), ("combine_pvalues", (U,))]
for _name, _args in _STAT:
    case(f"stats.{_name}().statistic", lambda *a, _n=_name: getattr(stats, _n)(*a).statistic, *_args)
case("stats.ttest_1samp().statistic", lambda x: stats.ttest_1samp(x, 0.1).statistic, S)

# ---------------------------------------------------------------------------
# What is right for each case that does not give gradients
# ---------------------------------------------------------------------------
_BY_NAME = {c.name: c for c in CASES}


def expect(outcome, *names, xfail=None, client=None):
    for name in names:
        c = _BY_NAME["scipy." + name]
        c.expect, c.xfail, c.client = outcome, xfail, client


# Writes into an array a node saved (scale[mask] = 1, xpx.at(a, i).set(v), a[...] /= s):
# backward refuses under the default policy, and is right under pg.inplace_policy("copy").
expect("copy", "special.logsumexp(b=)", "special.logsumexp(b=, axis=0)", "special.logsumexp(return_sign)",
       "special.log_softmax", "special.log_softmax(axis=0)", "stats.boxcox_llf", "stats.false_discovery_control",
       "integrate.romb", "cluster.vq.whiten")
# mode writes into the counts unique_counts returned (xpx.at(cnts)[mask].set(...)), which
# unique_counts' backward divides by: refused under the default policy, right under "copy".
expect("copy", "stats.mode")
# Computed by numpy (the client has no generic implementation for a namespace it does not
# know: np.asarray of the arguments, xp.asarray of the result): np.asarray refuses a Variable
# that requires grad, as PyTorch does (the result would silently have no gradient); on
# x.detach() they give numpy's values.
expect("refused", "stats.entropy", "signal.convolve", "signal.convolve(mode='same')", "signal.convolve(2-d)",
       "signal.correlate", "signal.correlate(mode='same')", "signal.correlate(2-d)", "signal.convolve2d",
       "signal.correlate2d", "signal.lfilter", "signal.sosfilt", "signal.filtfilt", "signal.detrend",
       "signal.detrend(constant)", "signal.resample_poly", "signal.decimate", "signal.welch", "signal.periodogram",
       "signal.csd", "signal.coherence", "signal.upfirdn", "signal.medfilt", "signal.czt", "fft.dct", "fft.idct",
       "fft.dst", "fft.idst", "fft.dctn", "fft.idctn", "fft.dstn", "fft.idstn", "fft.dct(type=1)",
       "fft.dst(type=4, norm=ortho)", "integrate.simpson", "ndimage.gaussian_filter", "ndimage.uniform_filter",
       "ndimage.laplace", "ndimage.sobel", "ndimage.prewitt", "ndimage.median_filter", "ndimage.maximum_filter",
       "ndimage.convolve", "ndimage.shift", "ndimage.zoom", "ndimage.mean")
# Part of the result comes from numpy (p-values from special functions, ndimage filters),
# part from the namespace: refused at np.asarray, since the numpy part would enter the graph
# as a constant and the gradient would silently leave it out. So is the statistic alone of
# these tests (the call computes its p-value too): differentiate a statistic written with the
# namespace, or take values on x.detach().
expect("refused", "stats.jarque_bera", "stats.skewtest", "stats.normaltest", "stats.ttest_1samp", "stats.ttest_ind",
       "stats.ttest_rel", "stats.pearsonr", "stats.chisquare", "stats.power_divergence", "stats.bartlett",
       "stats.levene", "stats.f_oneway", "stats.combine_pvalues", "signal.savgol_filter", "signal.wiener",
       *[f"stats.{_name}().statistic" for _name, _ in _STAT], "stats.ttest_1samp().statistic")
# The same, in the user's own code: refused rather than a gradient without erf's part.
case("special.erf(x) + x", lambda x: special.erf(x) + x, X, expect="refused")
case("signal.convolve(x, k) * x", lambda x, k: signal.convolve(x, k, mode="same") * x, A, B, diff=(0,),
     expect="refused")
# Piecewise constant results (ranks, codes): values only (vq converts with numpy: refused on
# Variables that require grad).
for _c in ("stats.rankdata", "cluster.vq.vq"):
    _BY_NAME["scipy." + _c].diff = ()
expect("value", "stats.rankdata")
expect("refused", "cluster.vq.vq")
# Not Array API functions of scipy: plain numpy ufuncs, which Variables decline (__array_ufunc__ = None).
expect("refused", "special.expm1", "special.log1p", "special.beta")
expect("client", "signal.zoom_fft", client="converts its frequency range with numpy and mixes namespaces")
expect("client", "ndimage.sum_labels", client="converts index= with numpy and mixes namespaces")
