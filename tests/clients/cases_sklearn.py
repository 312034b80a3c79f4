"""scikit-learn's Array API support (``sklearn.set_config(array_api_dispatch=True)``) on Variables.

Preprocessing functions and transformers (``fit_transform``), pairwise distances and
kernels, regression and classification metrics, and a few estimators whose fitted
results are differentiable (Ridge, LinearDiscriminantAnalysis, PCA). Metrics return
Python floats (``float(...)`` inside): right values, no gradient.
"""

from __future__ import annotations

import numpy as np

from clients.harness import Case, Lazy, normal, positive, uniform

REQUIRES = ("sklearn", "scipy")

sklearn = Lazy("sklearn")
pp = Lazy("sklearn.preprocessing")
pw = Lazy("sklearn.metrics.pairwise")
metrics = Lazy("sklearn.metrics")
linear_model = Lazy("sklearn.linear_model")
decomposition = Lazy("sklearn.decomposition")
da = Lazy("sklearn.discriminant_analysis")
kernel_approximation = Lazy("sklearn.kernel_approximation")
mixture = Lazy("sklearn.mixture")
naive_bayes = Lazy("sklearn.naive_bayes")
extmath = Lazy("sklearn.utils.extmath")


def setup():
    sklearn.set_config(array_api_dispatch=True)


X = normal(6, 3)
Y = normal(4, 3, seed=1)
XP = positive(6, 3, seed=2)
YP = positive(4, 3, seed=3)
T = normal(6, seed=4)  # regression targets
TP = positive(6, seed=5)
LAB = np.array([0, 1, 0, 1, 1, 0])
LAB3 = np.array([0, 1, 2, 1, 0, 2])
PROB = uniform(6, seed=6)

CASES: list[Case] = []


def case(name, fn, *args, **kw):
    CASES.append(Case("sklearn." + name, fn, args, **kw))


# ---------------------------------------------------------------------------
# preprocessing
# ---------------------------------------------------------------------------
case("preprocessing.normalize", lambda x: pp.normalize(x), X)
case("preprocessing.normalize(l1)", lambda x: pp.normalize(x, norm="l1"), XP)
case("preprocessing.normalize(max)", lambda x: pp.normalize(x, norm="max"), X)
case("preprocessing.normalize(axis=0)", lambda x: pp.normalize(x, axis=0), X)
case("preprocessing.scale", lambda x: pp.scale(x), X)
case("preprocessing.minmax_scale", lambda x: pp.minmax_scale(x), X)
case("preprocessing.maxabs_scale", lambda x: pp.maxabs_scale(x), X)
case("preprocessing.StandardScaler", lambda x: pp.StandardScaler().fit_transform(x), X)
case("preprocessing.StandardScaler(with_std=False)", lambda x: pp.StandardScaler(with_std=False).fit_transform(x), X)
case("preprocessing.StandardScaler.inverse_transform",
     lambda x, y: pp.StandardScaler().fit(x).inverse_transform(y), X, Y)
case("preprocessing.MinMaxScaler", lambda x: pp.MinMaxScaler().fit_transform(x), X)
case("preprocessing.MaxAbsScaler", lambda x: pp.MaxAbsScaler().fit_transform(x), X)
case("preprocessing.Normalizer", lambda x: pp.Normalizer().fit_transform(x), X)
case("preprocessing.KernelCenterer", lambda k: pp.KernelCenterer().fit_transform(k), XP[:3] @ XP[:3].T)
case("preprocessing.PolynomialFeatures", lambda x: pp.PolynomialFeatures(2).fit_transform(x), X)
case("preprocessing.Binarizer", lambda x: pp.Binarizer().fit_transform(x), X, diff=())
case("preprocessing.LabelEncoder", lambda y: pp.LabelEncoder().fit_transform(y), LAB3)
case("preprocessing.LabelBinarizer", lambda y: pp.LabelBinarizer().fit_transform(y), LAB3)
case("preprocessing.label_binarize", lambda y: pp.label_binarize(y, classes=[0, 1, 2]), LAB3)

# ---------------------------------------------------------------------------
# metrics.pairwise
# ---------------------------------------------------------------------------
for _name in ("cosine_similarity", "cosine_distances", "euclidean_distances", "rbf_kernel", "linear_kernel",
              "polynomial_kernel", "sigmoid_kernel", "laplacian_kernel", "manhattan_distances"):
    case(f"metrics.pairwise.{_name}", lambda x, y, _n=_name: getattr(pw, _n)(x, y), X, Y)
case("metrics.pairwise.chi2_kernel", lambda x, y: pw.chi2_kernel(x, y), XP, YP)
case("metrics.pairwise.additive_chi2_kernel", lambda x, y: pw.additive_chi2_kernel(x, y), XP, YP)
case("metrics.pairwise.euclidean_distances(squared)", lambda x, y: pw.euclidean_distances(x, y, squared=True), X, Y)
case("metrics.pairwise.cosine_similarity(X)", lambda x: pw.cosine_similarity(x), X)
case("metrics.pairwise.paired_cosine_distances", lambda x, y: pw.paired_cosine_distances(x, y), X[:4], Y)
case("metrics.pairwise.paired_euclidean_distances", lambda x, y: pw.paired_euclidean_distances(x, y), X[:4], Y)
case("metrics.pairwise_distances", lambda x, y: metrics.pairwise_distances(x, y), X, Y)
case("metrics.pairwise_kernels(rbf)", lambda x, y: metrics.pairwise_kernels(x, y, metric="rbf"), X, Y)

# ---------------------------------------------------------------------------
# metrics (most end in float(...): values only)
# ---------------------------------------------------------------------------
for _name in ("r2_score", "mean_squared_error", "mean_absolute_error", "root_mean_squared_error",
              "explained_variance_score", "mean_absolute_percentage_error", "max_error", "median_absolute_error"):
    case(f"metrics.{_name}", lambda y, p, _n=_name: getattr(metrics, _n)(y, p), T, T[::-1].copy())
for _name in ("mean_squared_log_error", "root_mean_squared_log_error", "mean_poisson_deviance", "mean_gamma_deviance",
              "d2_tweedie_score"):
    case(f"metrics.{_name}", lambda y, p, _n=_name: getattr(metrics, _n)(y, p), TP, TP[::-1].copy())
case("metrics.mean_tweedie_deviance", lambda y, p: metrics.mean_tweedie_deviance(y, p, power=1.5), TP,
     TP[::-1].copy())
case("metrics.r2_score(multioutput=raw_values)", lambda y, p: metrics.r2_score(y, p, multioutput="raw_values"), X,
     X[::-1].copy())
case("metrics.log_loss", lambda y, p: metrics.log_loss(y, p), LAB, PROB)
case("metrics.brier_score_loss", lambda y, p: metrics.brier_score_loss(y, p), LAB, PROB)
for _name in ("accuracy_score", "zero_one_loss", "f1_score", "precision_score", "recall_score", "jaccard_score",
              "hamming_loss", "matthews_corrcoef", "balanced_accuracy_score", "cohen_kappa_score",
              "confusion_matrix"):
    case(f"metrics.{_name}", lambda y, p, _n=_name: getattr(metrics, _n)(y, p), LAB, LAB[::-1].copy())

# ---------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------
case("linear_model.Ridge.coef_", lambda x, y: linear_model.Ridge(alpha=0.5).fit(x, y).coef_, X, T)
case("linear_model.Ridge(svd).predict", lambda x, y: linear_model.Ridge(alpha=0.5, solver="svd").fit(x, y).predict(x),
     X, T)
case("linear_model.RidgeCV.coef_", lambda x, y: linear_model.RidgeCV(alphas=(0.1, 1.0)).fit(x, y).coef_, X, T)
case("linear_model.RidgeClassifier.decision_function",
     lambda x, y: linear_model.RidgeClassifier(alpha=0.5).fit(x, y).decision_function(x), X, LAB)
case("decomposition.PCA.fit_transform", lambda x: decomposition.PCA(2, svd_solver="full").fit_transform(x), X)
case("decomposition.PCA.explained_variance_", lambda x: decomposition.PCA(2, svd_solver="full").fit(x)
     .explained_variance_, X)
case("discriminant_analysis.LinearDiscriminantAnalysis.predict_proba",
     lambda x, y: da.LinearDiscriminantAnalysis(solver="svd").fit(x, y).predict_proba(x), X, LAB)
case("kernel_approximation.Nystroem", lambda x: kernel_approximation.Nystroem(n_components=3, random_state=0)
     .fit_transform(x), X)
case("naive_bayes.GaussianNB.predict_proba", lambda x, y: naive_bayes.GaussianNB().fit(x, y).predict_proba(x), X, LAB)
case("mixture.GaussianMixture.score_samples",
     lambda x: mixture.GaussianMixture(1, covariance_type="diag", init_params="random_from_data",
                                       random_state=0).fit(x).score_samples(x), X)
case("utils.extmath.softmax", lambda x: extmath.softmax(x), X)
case("utils.extmath.row_norms", lambda x: extmath.row_norms(x), X)

# ---------------------------------------------------------------------------
# What is right for each case that does not give gradients
# ---------------------------------------------------------------------------
_BY_NAME = {c.name: c for c in CASES}


def expect(outcome, *names, xfail=None, client=None):
    for name in names:
        c = _BY_NAME["sklearn." + name]
        c.expect, c.xfail, c.client = outcome, xfail, client


# Writes into an array a node saved (norms[norms == 0] = 1, X /= norms, ...).
expect("copy", "preprocessing.normalize", "preprocessing.normalize(l1)", "preprocessing.normalize(max)",
       "preprocessing.normalize(axis=0)", "preprocessing.Normalizer", "preprocessing.PolynomialFeatures",
       "metrics.pairwise.cosine_similarity", "metrics.pairwise.cosine_distances",
       "metrics.pairwise.cosine_similarity(X)",
       "metrics.pairwise.paired_cosine_distances", "discriminant_analysis.LinearDiscriminantAnalysis.predict_proba",
       "mixture.GaussianMixture.score_samples", "utils.extmath.softmax")
# StandardScaler writes into the sqrt it saved (scale[scale == 0] = 1: fixed by "copy"), but its
# first fit also computes 0/0 = NaN and overwrites it by a masked assignment; reverse mode then
# multiplies a zero cotangent by a NaN partial (0 * NaN = NaN), as PyTorch and JAX would.
_NAN = "client: its first fit computes 0/0 and overwrites it (u[zeros] = ...): NaN gradient (0 * NaN)"
expect("copy", "preprocessing.StandardScaler", "preprocessing.StandardScaler.inverse_transform", xfail=_NAN)
# PCA's svd_flip does `u *= signs` on the U that svd's backward reads: refused under the default
# policy (the version check, as PyTorch's), right under "copy".
expect("copy", "decomposition.PCA.fit_transform", "decomposition.PCA.explained_variance_")
# Metrics that end in float(...): right values, a Python float.
expect("numpy", "metrics.r2_score", "metrics.mean_squared_error", "metrics.mean_absolute_error",
       "metrics.root_mean_squared_error", "metrics.explained_variance_score", "metrics.mean_absolute_percentage_error",
       "metrics.max_error", "metrics.median_absolute_error", "metrics.mean_squared_log_error",
       "metrics.root_mean_squared_log_error", "metrics.mean_poisson_deviance", "metrics.mean_gamma_deviance",
       "metrics.d2_tweedie_score", "metrics.mean_tweedie_deviance", "metrics.log_loss", "metrics.brier_score_loss")
# Labels and counts: values only.
for _c in ("preprocessing.Binarizer", "preprocessing.LabelEncoder", "preprocessing.LabelBinarizer",
           "preprocessing.label_binarize", "metrics.accuracy_score", "metrics.zero_one_loss", "metrics.f1_score",
           "metrics.precision_score", "metrics.recall_score", "metrics.jaccard_score", "metrics.hamming_loss",
           "metrics.balanced_accuracy_score", "metrics.cohen_kappa_score", "metrics.confusion_matrix"):
    expect("value", _c)
# scale() converts with numpy (check_array): refused on a Variable that requires grad; on
# array_api_strict it first passes numpy dtypes to the namespace, as on plain array_api_strict arrays.
_BY_NAME["sklearn.preprocessing.scale"].expect = {"numpy": "refused", "strict": "client"}
_STRICT_DTYPE = "passes numpy dtypes to a non-numpy namespace (fails on plain array_api_strict arrays too)"
for _c in ("preprocessing.minmax_scale", "preprocessing.maxabs_scale"):
    _BY_NAME["sklearn." + _c].expect = {"numpy": "grad", "strict": "client"}
    _BY_NAME["sklearn." + _c].client = _STRICT_DTYPE
_BY_NAME["sklearn.preprocessing.scale"].client = _STRICT_DTYPE
# It divides integer arrays (implementation-defined in the standard), casting first only for a
# namespace named array_api_strict: polygrad's strict backend refuses the division clearly.
_BY_NAME["sklearn.metrics.balanced_accuracy_score"].expect = {"numpy": "value", "strict": "refused"}
expect("client", "metrics.matthews_corrcoef", client="mixes its own numpy namespace with the input's")
