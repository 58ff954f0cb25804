"""memstream's lab: the benchmarks (`bench`), the LoCoMo evaluation (`eval`) and the LoCoMo
data set (`locomo`). It imports memstream; memstream never imports it (.importlinter)."""
