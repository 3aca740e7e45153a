"""``ar1_reml_covariance``: intervals that survive a slow noise the fit partly absorbs.

The oracle is a linear model, whose estimator's covariance is known exactly: with design
``X`` and noise covariance ``Sigma``, ``cov = B X^T Sigma X B``, ``B = (X^T X)^-1``.
"""

import numpy as np
import pytest
from scipy import stats

from ncdynamics.theories.testing import noise_series
from ncdynamics.theories.uncertainty import (
    ar1_reml_covariance,
    covariance_from_jacobian,
    residual_autocorrelation,
)

N, DRAWS = 25, 200
T = np.linspace(0.0, 1.0, N)
X = np.stack([np.ones(N), T, T**2, T**3], axis=1)  # a smooth fit absorbs slow noise


def _exact_sd(rho):
    lags = np.abs(np.subtract.outer(np.arange(N), np.arange(N)))
    bread = np.linalg.inv(X.T @ X)
    return np.sqrt(np.diag(bread @ X.T @ (rho**lags) @ X @ bread))


def _draws(kind, method):
    rng = np.random.default_rng(7)
    hits, ses, rhos = [], [], []
    for _ in range(DRAWS):
        e = noise_series(rng, N, kind)
        coef = np.linalg.lstsq(X, e, rcond=None)[0]  # the true coefficients are 0
        res = e - X @ coef
        if method == "reml":
            cov, _, dof, _ = ar1_reml_covariance(X, res)
        else:
            cov, _, dof = covariance_from_jacobian(X, res)
        se = np.sqrt(np.diag(cov))
        hits.append(np.abs(coef) <= stats.t.ppf(0.975, dof) * se)
        ses.append(se)
        rhos.append(residual_autocorrelation(res))
    return np.mean(hits, axis=0), np.median(ses, axis=0), float(np.mean(rhos))


def test_residuals_hide_the_correlation_of_a_slow_noise():
    # the premise: after a four-parameter smooth fit, the residuals of AR(1) noise with
    # rho = 0.9 look far less correlated, even with the small-sample correction
    *_, rho = _draws("ar1", "plug-in")
    assert rho < 0.6


@pytest.mark.parametrize("kind", ["independent", "ar1"])
def test_reml_intervals_cover_and_match_the_exact_standard_error(kind):
    coverage, se, _ = _draws(kind, "reml")
    # 200 draws; under AR(1) the intercept is the hardest (0.87: the records cannot rule out
    # a smaller rho when the fit has absorbed the noise's slow swings)
    assert np.mean(coverage) >= 0.9 and np.all(coverage >= 0.85), coverage
    exact = _exact_sd(0.9 if kind == "ar1" else 0.0)
    assert np.all((se / exact > 0.6) & (se / exact < 1.4)), se / exact


def test_plug_in_intervals_are_too_narrow_under_slow_noise():
    coverage, *_ = _draws("ar1", "plug-in")
    assert np.mean(coverage) < 0.85, coverage


def test_shapes_and_degenerate_inputs():
    rng = np.random.default_rng(0)
    res = rng.standard_normal(2 * N)
    jac = np.concatenate([X, X])
    cov, s2, dof, rho = ar1_reml_covariance(jac, res, series=2)
    assert cov.shape == (4, 4) and np.all(np.isfinite(cov)) and s2 > 0
    assert 0.0 <= rho <= 0.99 and 0 < dof <= 2 * N - 4
    flat = np.concatenate([jac, np.zeros((2 * N, 1))], axis=1)
    cov_flat = ar1_reml_covariance(flat, res, series=2)[0]
    assert np.all(np.isinf(cov_flat[4])) and np.all(np.isinf(cov_flat[:, 4]))
    assert np.all(np.isfinite(cov_flat[:4, :4]))
    assert np.all(np.isinf(ar1_reml_covariance(X[:3], res[:3])[0]))
    with pytest.raises(ValueError, match="`residuals` must have 50 entries"):
        ar1_reml_covariance(jac, res[:10])


def test_covariance_is_the_ar1_sandwich_at_the_returned_rho():
    rng = np.random.default_rng(1)
    jac = rng.standard_normal((30, 3))
    res = 0.3 * np.cumsum(rng.standard_normal(30)) + rng.standard_normal(30)
    cov, s2, _, rho = ar1_reml_covariance(jac, res)
    lags = np.abs(np.subtract.outer(np.arange(30), np.arange(30)))
    bread = np.linalg.inv(jac.T @ jac)
    np.testing.assert_allclose(cov, bread @ jac.T @ (s2 * rho**lags) @ jac @ bread, rtol=1e-10)
    assert 0.0 < rho < 0.99  # a random walk plus noise: correlated, not a walk


def test_a_jacobian_of_lower_rank_gives_no_nan_and_no_warning():
    """Two parameters that move the curve the same way (collinear columns) make the REML
    normal matrix singular at every rho; its log-determinant is then that of its nonzero
    part, not -inf, so no likelihood is NaN and the chosen rho is not arbitrary."""
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 1.0, 30)
    jac = np.column_stack([np.ones_like(t), t, 2 * t])  # the third column repeats the second
    res = 0.01 * rng.standard_normal(t.size)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cov, s2, dof, rho = ar1_reml_covariance(jac, res)
    assert np.isfinite(s2) and np.isfinite(rho) and not np.isnan(cov).any()
    full_cov, _, _, full_rho = ar1_reml_covariance(jac[:, :2], res)
    assert rho == full_rho  # the repeated direction adds nothing to the noise model


def _few_records_draws(kind, **kwargs):
    """``(rho, s2)`` of ``ar1_reml_covariance`` over 300 seeded draws of a forecast origin's
    records: 9 records of 3 series fitted together (an intercept each and one shared slope,
    as hadamard fits K - 1 = 3 singular values with one time scale), unit noise variance."""
    n, series = 9, 3
    t = np.linspace(0.0, 1.0, n)
    jac = np.zeros((n, series, series + 1))
    for s in range(series):
        jac[:, s, s] = 1.0
        jac[:, s, series] = (s + 1) * t
    jac = jac.reshape(n * series, series + 1)
    rng = np.random.default_rng(3)
    rhos, s2s = [], []
    for _ in range(300):
        e = noise_series(rng, n, kind, size=(series,)).ravel()
        res = e - jac @ np.linalg.lstsq(jac, e, rcond=None)[0]
        _, s2, _, rho = ar1_reml_covariance(jac, res, series=series, layout="interleaved", **kwargs)
        rhos.append(rho)
        s2s.append(s2)
    return np.array(rhos), np.array(s2s)


def test_the_reml_maximum_reads_no_correlation_into_independent_noise():
    """On a forecast origin's few records, the posterior median of rho leans towards a slow
    noise (about 0.2 on independent noise, and a noise variance 1.1 times the true one); the
    restricted likelihood's own maximum is 0 on most draws and its variance is unbiased, while
    it still finds a slow noise (rho = 0.9) where there is one."""
    rho, s2 = _few_records_draws("independent", rho_estimate="maximum")
    assert np.median(rho) == 0.0 and 0.9 < np.median(s2) < 1.1
    rho_median, s2_median = _few_records_draws("independent")
    assert np.median(rho_median) >= 0.15 and np.median(s2_median) > 1.05
    rho_slow, _ = _few_records_draws("ar1", rho_estimate="maximum")
    assert np.median(rho_slow) > 0.7


def test_rho_estimate_must_be_named():
    with pytest.raises(ValueError, match="`rho_estimate` must be 'median' or 'maximum'"):
        ar1_reml_covariance(X, np.ones(N), rho_estimate="mean")


def test_ar1_meat_with_a_given_coefficient_is_the_ar1_covariance_sandwiched():
    """Oracle: ``J^T Sigma J`` with ``Sigma_ij = s2 rho^|i-j|`` built entry by entry; ``rho=0``
    is ``s2 J^T J``; without ``rho`` the residuals' own coefficient is used."""
    from ncdynamics.theories.uncertainty import ar1_meat, residual_autocorrelation

    rng = np.random.default_rng(3)
    jac, res = rng.normal(size=(9, 2)), np.cumsum(rng.normal(size=9))
    sigma = np.array([[1.5 * 0.6 ** abs(i - j) for j in range(9)] for i in range(9)])
    np.testing.assert_allclose(ar1_meat(jac, res, 1.5, rho=0.6), jac.T @ sigma @ jac, rtol=1e-12)
    np.testing.assert_allclose(ar1_meat(jac, res, 1.5, rho=0.0), 1.5 * jac.T @ jac, rtol=1e-12)
    own = residual_autocorrelation(res)
    assert own > 0
    np.testing.assert_allclose(ar1_meat(jac, res, 1.5), ar1_meat(jac, res, 1.5, rho=own))
