"""Cloud GPU prices: Starburst's own table, preferring SkyPilot's catalog when it is on disk.

``load_price_table(path=None)`` reads (and validates) the shipped defaults or an admin's file;
``PriceTable.options(gpu, count, cloud=None, spot=False)`` lists the ways to rent GPUs,
cheapest first; ``price(...)`` is the cheapest one from the defaults. Quotes before a burst and
cost metering after it both use this table, so the estimate a user sees and the bill agree.
"""

from starburst.pricing.catalog import SkyPilotCatalog, default_catalog_dir
from starburst.pricing.table import (
    PriceOption,
    PriceTable,
    PriceTableError,
    canonical_gpu,
    default_price_table,
    gpu_type_in,
    gpus_in,
    load_price_table,
    node_shape,
    parse_price_table,
    price,
)

__all__ = [
    "PriceOption",
    "PriceTable",
    "PriceTableError",
    "SkyPilotCatalog",
    "canonical_gpu",
    "default_catalog_dir",
    "default_price_table",
    "gpu_type_in",
    "gpus_in",
    "load_price_table",
    "node_shape",
    "parse_price_table",
    "price",
]
