# Reference p-values for tests/test_stats.py: Freedman & Lane's (1983) permutation test of a partial
# Spearman correlation with a studentised statistic (issue 44), enumerating every permutation, written
# with base R only (lm, qr, rank).
#
# The test suite runs this script afresh (tests/test_stats.py, fixture `r_freedman_lane`) and compares
# depthlab.stats.permutation_pvalue (which enumerates every permutation when n! <= n_perm) with
# what it writes; no number from it is stored in the repository.
#
# Usage: Rscript tests/r/freedman_lane_reference.R CASES.csv OUT.csv
#   CASES.csv  one row per case: id, data (path of a CSV with a header), x, y, covar (column names
#              joined by ";", may be empty)
#   OUT.csv    one row per case: id, r, p, n_perm (numbers printed with 17 significant digits)
#
# The textbook procedure (Anderson & Legendre 1999, sec. 2.3; Winkler et al. 2014, table 2), on ranks:
#   1. rank every column (average ranks for ties);
#   2. fit the reduced model y ~ covar; keep its fitted values f and residuals e;
#   3. for every permutation p of 1..n: y* = f + e[p]; with a = residuals(lm(x ~ covar)) and
#      b = residuals(lm(y* ~ covar)), the statistic is t* = sum(a b) / sqrt(sum(a^2 b^2)): the
#      covariance of the two residual vectors over its heteroscedasticity-consistent standard error
#      (DiCiccio & Romano 2017's studentised correlation); 0 when every a_i b_i is 0;
#   4. p = #{|t*| >= |t|} / n! (the identity is one of the permutations).
# The script also prints r, the plain partial correlation cor(a, residuals(lm(y ~ covar))).
# A permuted statistic equal to the observed one up to rounding (a permutation of tied residuals)
# counts as at least as extreme: |t*| >= |t| - 1e-9.

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) stop("usage: Rscript freedman_lane_reference.R CASES.csv OUT.csv")
cases <- read.csv(args[1], stringsAsFactors = FALSE, colClasses = "character")

all_permutations <- function(n) {
  if (n == 1) return(matrix(1L, 1, 1))
  smaller <- all_permutations(n - 1)
  out <- matrix(0L, nrow(smaller) * n, n)
  row <- 0
  for (i in seq_len(nrow(smaller))) {
    for (at in 0:(n - 1)) {
      row <- row + 1
      out[row, ] <- append(smaller[i, ], n, after = at)
    }
  }
  out
}

# residuals of the least-squares fit of v on an intercept and z (lm's, through its QR decomposition)
residual_on <- function(v, z) qr.resid(qr(cbind(1, z)), v)

out <- data.frame(id = character(), r = character(), p = character(), n_perm = integer())
for (i in seq_len(nrow(cases))) {
  case <- cases[i, ]
  data <- read.csv(case$data)
  covar <- if (nchar(case$covar) == 0) character() else strsplit(case$covar, ";", fixed = TRUE)[[1]]
  m <- as.matrix(data[, c(case$x, case$y, covar), drop = FALSE])
  m <- apply(m, 2, rank)
  z <- m[, -(1:2), drop = FALSE]
  x <- m[, 1]
  y <- m[, 2]
  reduced <- if (ncol(z) == 0) lm(y ~ 1) else lm(y ~ z)
  fitted_y <- fitted(reduced)
  e <- residuals(reduced)
  rx <- residual_on(x, z)
  observed <- cor(rx, residual_on(y, z))
  perms <- all_permutations(nrow(m))
  studentised <- function(b) {
    spread <- sqrt(sum(rx^2 * b^2))
    if (spread > 0) sum(rx * b) / spread else 0
  }
  t_observed <- studentised(residual_on(y, z))
  stars <- apply(perms, 1, function(p) studentised(residual_on(fitted_y + e[p], z)))
  p <- sum(abs(stars) >= abs(t_observed) - 1e-9) / nrow(perms)
  out[i, ] <- list(case$id, sprintf("%.17g", observed), sprintf("%.17g", p), nrow(perms))
}
write.csv(out, args[2], row.names = FALSE)
cat(sprintf("freedman_lane_reference.R: %d cases, %s\n", nrow(out), R.version.string))
