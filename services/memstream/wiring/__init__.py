"""Building and connecting the parts of a process for the composition root
(`memstream.bootstrap`): its adapters (`container`) and its handlers (`handlers`)."""
