# Reference values for tests/test_stats.py: ppcor's partial and semi-partial correlations, written
# with base R only (no package to install: Debian's r-base-core is enough).
#
# The test suite runs this script afresh (tests/test_stats.py, fixture `r_reference`) and compares
# depthlab.stats against what it writes; no number from it is stored in the repository.
#
# Usage: Rscript tests/r/ppcor_reference.R CASES.csv OUT.csv
#   CASES.csv  one row per case: id, data (path of a CSV with a header), x, y, covar (column
#              names joined by ";"), method ("pearson" | "spearman"), kind ("partial" | "semipartial")
#   OUT.csv    one row per case: id, r, p, n, k (numbers printed with 17 significant digits)
#
# The formulas are ppcor 1.1's (Kim 2015, "ppcor: An R Package for a Fast Calculation to
# Semi-partial Correlation Coefficients", Commun Stat Appl Methods 22(6)):
#   * Spearman ranks every column first (average ranks for ties) and then proceeds as Pearson.
#   * partial (pcor.test): from the inverse P of the correlation matrix of (x, y, z),
#       r = -P[x, y] / sqrt(P[x, x] P[y, y]).
#   * semi-partial (spcor.test(x, y, z)): z is removed from y only, i.e. the correlation of x with
#     the residual of the least-squares regression of y on z (with an intercept).
#   * both: t = r sqrt((n - 2 - k) / (1 - r^2)), p = 2 P(T > |t|) with n - 2 - k degrees of freedom
#     (k = number of covariates).

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) stop("usage: Rscript ppcor_reference.R CASES.csv OUT.csv")
cases <- read.csv(args[1], stringsAsFactors = FALSE, colClasses = "character")

partial_r <- function(m) {
  precision <- solve(cor(m))
  -precision[1, 2] / sqrt(precision[1, 1] * precision[2, 2])
}

semipartial_r <- function(m) {
  if (ncol(m) == 2) return(cor(m[, 1], m[, 2]))
  z <- m[, -(1:2), drop = FALSE]
  residual <- residuals(lm(m[, 2] ~ z))
  cor(m[, 1], residual)
}

t_test_p <- function(r, n, k) {
  dof <- n - 2 - k
  statistic <- r * sqrt(dof / (1 - r^2))
  2 * pt(-abs(statistic), dof)
}

out <- data.frame(id = character(), r = character(), p = character(), n = integer(), k = integer())
for (i in seq_len(nrow(cases))) {
  case <- cases[i, ]
  data <- read.csv(case$data)
  covar <- if (nchar(case$covar) == 0) character() else strsplit(case$covar, ";", fixed = TRUE)[[1]]
  m <- as.matrix(data[, c(case$x, case$y, covar), drop = FALSE])
  m <- m[stats::complete.cases(m), , drop = FALSE]
  if (case$method == "spearman") m <- apply(m, 2, rank)
  else if (case$method != "pearson") stop("unknown method: ", case$method)
  r <- switch(case$kind, partial = partial_r(m), semipartial = semipartial_r(m), stop("unknown kind: ", case$kind))
  n <- nrow(m)
  k <- length(covar)
  out[i, ] <- list(case$id, sprintf("%.17g", r), sprintf("%.17g", t_test_p(r, n, k)), n, k)
}
write.csv(out, args[2], row.names = FALSE)
cat(sprintf("ppcor_reference.R: %d cases, %s\n", nrow(out), R.version.string))
