"""The domain's words, as the C++ model (include/gpucost/model.h) spells them.

Each enum is a :class:`enum.StrEnum`: its members *are* the strings tables,
configs and results carry, so ``Purchase.SPOT == "spot"`` and a member goes
wherever a string went (``allocate(..., basis=Basis.USED)``,
``costs["pricing"] == Purchase.SPOT``). Plain strings keep working.
``tests/python/test_model.py`` checks every enum against the C++ spelling
tables, value by value and in order.

Examples
--------
>>> from gpucost import Purchase, Basis
>>> Purchase("savings_plan").is_commitment
True
>>> [p.value for p in Purchase if p.is_commitment]
['reserved', 'savings_plan', 'cud', 'commitment']
>>> Basis.USED == "used"
True
"""

from __future__ import annotations

import enum

__all__ = ["Provider", "MigBasis", "Purchase", "Payment", "ChargeCategory", "Basis", "IdleMode", "CostDriver",
           "Reserved", "COMMITMENTS", "NOT_WORKLOADS"]


class Provider(enum.StrEnum):
    """Who sells the GPU time: a cloud, hardware you own (``onprem``), or another seller.

    >>> Provider("aws") is Provider.AWS
    True
    """

    AWS = "aws"
    GCP = "gcp"
    AZURE = "azure"
    ONPREM = "onprem"
    OTHER = "other"


class MigBasis(enum.StrEnum):
    """Which fraction of a GPU a MIG slice stands for: compute slices (default) or memory slices.

    >>> import gpucost
    >>> gpucost.catalog.mig_share("A100 80GB", "1g.10gb", basis=MigBasis.MEMORY)
    0.125
    """

    COMPUTE = "compute"
    MEMORY = "memory"


class Purchase(enum.StrEnum):
    """How GPU time was bought: the ``pricing`` column of cost lines.

    ``commitment`` is a commitment discount whose kind the export does not
    say (FOCUS ``Committed`` without a ``CommitmentDiscountType``).

    >>> import pandas as pd
    >>> pricing = pd.Series(["on_demand", "spot", "savings_plan"])
    >>> (pricing == Purchase.SPOT).tolist()
    [False, True, False]
    >>> pricing.isin(COMMITMENTS).tolist()
    [False, False, True]
    """

    ON_DEMAND = "on_demand"
    SPOT = "spot"
    RESERVED = "reserved"
    SAVINGS_PLAN = "savings_plan"
    COMMITTED_USE = "cud"
    COMMITMENT = "commitment"
    CAPACITY_BLOCK = "capacity_block"
    OWNED = "owned"
    LEASE = "lease"
    RATE_CARD = "rate_card"
    OTHER = "other"

    @property
    def is_commitment(self) -> bool:
        """A commitment discount: reserved, savings plan, CUD or an untyped commitment."""
        return self in COMMITMENTS


COMMITMENTS: frozenset[Purchase] = frozenset(
    {Purchase.RESERVED, Purchase.SAVINGS_PLAN, Purchase.COMMITTED_USE, Purchase.COMMITMENT})
"""The commitment discounts, for ``costs["pricing"].isin(COMMITMENTS)``."""


class Payment(enum.StrEnum):
    """How a commitment is paid for.

    >>> Payment("all_upfront") is Payment.ALL_UPFRONT
    True
    """

    NO_UPFRONT = "no_upfront"
    PARTIAL_UPFRONT = "partial_upfront"
    ALL_UPFRONT = "all_upfront"


class ChargeCategory(enum.StrEnum):
    """What a bill line is, in FOCUS's words: the ``charge_category`` column.

    >>> ChargeCategory.TAX == "Tax"
    True
    """

    USAGE = "Usage"
    PURCHASE = "Purchase"
    TAX = "Tax"
    CREDIT = "Credit"
    ADJUSTMENT = "Adjustment"


class Basis(enum.StrEnum):
    """What a consumer pays for: GPU time held, GPU time kept busy, or a blend with memory.

    >>> f"basis={Basis.USED}"
    'basis=used'
    """

    ALLOCATED = "allocated"
    USED = "used"
    BLENDED = "blended"


class IdleMode(enum.StrEnum):
    """Idle cost kept on ``__idle__`` or shared over the line's consumers.

    >>> [mode.value for mode in IdleMode]
    ['keep', 'share']
    """

    KEEP = "keep"
    SHARE = "share"


class CostDriver(enum.StrEnum):
    """What a cost line is prorated by (docs/semantics.md, 9): the basis's GPU time, or each
    holder's measured energy (a power or electricity line, the costs table's ``driver`` column).

    >>> [driver.value for driver in CostDriver]
    ['gpu_time', 'energy']
    """

    GPU_TIME = "gpu_time"
    ENERGY = "energy"


class Reserved(enum.StrEnum):
    """The names results reserve for rows that are no workload's (docs/semantics.md, 2-4 and 10).

    >>> Reserved.IDLE == "__idle__"
    True
    >>> sorted(str(name) for name in NOT_WORKLOADS)
    ['__down__', '__idle__', '__unattributed__', '__unobserved__']
    """

    IDLE = "__idle__"
    UNATTRIBUTED = "__unattributed__"
    UNOBSERVED = "__unobserved__"
    UNLABELLED = "__unlabelled__"
    DOWN = "__down__"


NOT_WORKLOADS: frozenset[Reserved] = frozenset({Reserved.IDLE, Reserved.UNATTRIBUTED, Reserved.UNOBSERVED, Reserved.DOWN})
"""Consumer rows that are no workload's demand (``__unlabelled__`` is a label value of real workloads)."""
