# Reference values for tests/test_stats.py: R ppcor 1.1 on pingouin's example data set.
#
# R is not installed on the build machine; this script documents where the numbers that the tests
# compare against come from (the values are also listed in DESIGN.md, "Statistics").
#
# The data: pingouin's bundled `partial_corr` data set (n = 30; columns x, y, cv1, cv2, cv3), the
# file pingouin/datasets/partial_corr.csv of the installed package, the same data as
# `pingouin.read_dataset("partial_corr")`. Point PARTIAL_CORR_CSV at it, e.g.
#   PARTIAL_CORR_CSV=$(python -c "import pingouin, os; print(os.path.join(os.path.dirname(pingouin.__file__), 'datasets', 'partial_corr.csv'))") \
#     Rscript tests/r/ppcor_reference.R
#
# Output (R 4.x, ppcor 1.1), digits = 10:
#   pearson  x,y | cv1            r = 0.5681692  p = 0.001303059
#   pearson  x,y | cv1,cv2        r = 0.5344372  p = 0.003392904
#   pearson  x,y | cv1,cv2,cv3    r = 0.4926007  p = 0.009044164
#   spearman x,y | cv1,cv2,cv3    r = 0.5209208  p = 0.005336187
#   semi-partial pearson  x,y | cv1 (removed from y)          r = 0.5670793  p = 0.001337718
#   semi-partial spearman x,y | cv1,cv2,cv3 (removed from y)  r = 0.4597143  p = 0.01584262

library(ppcor)  # install.packages("ppcor")

path <- Sys.getenv("PARTIAL_CORR_CSV", "partial_corr.csv")
df <- read.csv(path)

show <- function(label, res) {
  cat(sprintf("%-45s r = %.7f  p = %.10g\n", label, res$estimate, res$p.value))
}

show("pearson  x,y | cv1", pcor.test(df$x, df$y, df$cv1))
show("pearson  x,y | cv1,cv2", pcor.test(df$x, df$y, df[, c("cv1", "cv2")]))
show("pearson  x,y | cv1,cv2,cv3", pcor.test(df$x, df$y, df[, c("cv1", "cv2", "cv3")]))
show("spearman x,y | cv1,cv2,cv3", pcor.test(df$x, df$y, df[, c("cv1", "cv2", "cv3")], method = "spearman"))
show("semi-partial pearson  x,y | cv1", spcor.test(df$x, df$y, df$cv1))
show("semi-partial spearman x,y | cv1,cv2,cv3",
     spcor.test(df$x, df$y, df[, c("cv1", "cv2", "cv3")], method = "spearman"))
