"""Spark layer: the ``hudi_evt`` Python Data Source and Spark-run writes.

* :mod:`evt_toolkit.spark.session`: one local session tuned for a small machine, with ``hudi_evt`` registered.
* :mod:`evt_toolkit.spark.datasource`: ``spark.read.format("hudi_evt")`` / ``df.write.format("hudi_evt")``.
* :mod:`evt_toolkit.spark.executor`: one Spark task per file group for :func:`evt_toolkit.write.writer.write`, and
  :func:`~evt_toolkit.spark.executor.write_dataframe` for DataFrames too big to collect.
* :mod:`evt_toolkit.spark.types`: the Arrow ↔ Spark schema mapping.

pyspark is imported by those modules only, so ``import evt_toolkit`` never needs it.
"""
