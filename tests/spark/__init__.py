"""Spark tests (the hudi_evt data source and Spark-run writes); one Spark session for the whole run."""
