"""Data-availability model of thesis §3.2 (eqs 3.1–3.12): servers vs embedded storage nodes.

A server-based system has m servers with n devices each; the embedded system has
m' = c·m single-device nodes. Both replicate 3 ways with copyset replication of
scatter width w (l = w·m/6 copysets), and servers/devices fail independently as
Poisson processes with rates R_m and R_d = f·R_m (R'_m = R_m, R'_d = R_d). The
relative benefit is P_loss(servers) / P_loss(embedded); eq. 3.12 evaluates it for
the combinations of exactly three failed components, for which the thesis gives
the combination counts N. A Monte Carlo simulation of the same model (real copysets
built with the copyset algorithm, Poisson draws, uniform failed components) checks
those counts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from colony.errors import InvalidParameter

#: Failure-rate ratio presets used in the thesis (§3.2.4).
F_HDD = 2.0
F_SSD = 0.06
#: Expected server failures in the observation window when none is given. The ratio
#: barely depends on it while failures are rare (it cancels as R_m -> 0).
DEFAULT_RM = 0.01


def pois(k: int, rate: float) -> float:
    """Eqs 3.1/3.2: P(exactly k failures) for a Poisson count with mean `rate`."""
    return rate ** k * math.exp(-rate) / math.factorial(k)


@dataclass(frozen=True)
class Params:
    m: int          # servers
    n: int          # devices per server (ratio of storage performance)
    c: int          # embedded nodes per server (ratio of computing performance); m' = c·m
    f: float        # R_d / R_m
    w: int = 4      # scatter width
    rm: float = DEFAULT_RM  # expected server failures in the window (R_m)

    @property
    def m_prime(self) -> int:
        return self.c * self.m

    @property
    def rd(self) -> float:
        return self.f * self.rm


def validate(m, n, c, f, w=4, rm=DEFAULT_RM) -> Params:
    """Check the thesis' parameter domain and return a Params; messages say what to fix."""
    def _int(name, v, lo):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise InvalidParameter(f"{name} must be an integer >= {lo}, got {v!r}")
        return int(v)
    m = _int("m (servers)", m, 3)
    n = _int("n (devices per server)", n, 2)
    c = _int("c (embedded nodes per server)", c, 1)
    if not isinstance(f, (int, float)) or math.isnan(f) or f <= 0:
        raise InvalidParameter(f"f (= R_d/R_m) must be > 0, got {f!r}")
    w = _int("w (scatter width)", w, 2)
    if w > m - 1:
        raise InvalidParameter(f"scatter width w={w} needs at least w+1 servers, but m={m}; "
                               f"use w <= {m - 1} or more servers")
    if not isinstance(rm, (int, float)) or math.isnan(rm) or rm <= 0:
        raise InvalidParameter(f"R_m (expected server failures) must be > 0, got {rm!r}")
    return Params(m, n, c, float(f), w, float(rm))


def copysets_gp(p: Params) -> float:
    """l_gp = w·m/6 copysets in the server system (copyset paper §3.2)."""
    return p.w * p.m / 6.0


def copysets_es(p: Params) -> float:
    """l_es = w·m'/6 copysets in the embedded system."""
    return p.w * p.m_prime / 6.0


def terms_gp(p: Params) -> dict[str, float]:
    """The four exactly-three-failure terms of the server system (eqs 3.3–3.5, numerator of 3.12)."""
    m, n, l = p.m, p.n, copysets_gp(p)
    return {
        "Pm(3)": pois(3, p.rm) * l / math.comb(m, 3),
        "Pd(3)": pois(3, p.rd) * n * l / math.comb(m * n, 3),
        "Pmd(1,2)": pois(1, p.rm) * pois(2, p.rd) * 3 * n * l / (math.comb(m, 1) * math.comb(m * n, 2)),
        "Pmd(2,1)": pois(2, p.rm) * pois(1, p.rd) * 3 * n * l / (math.comb(m, 2) * math.comb(m * n, 1)),
    }


def terms_es(p: Params) -> dict[str, float]:
    """The same terms for the embedded system (eqs 3.8–3.10, denominator of 3.12)."""
    mp, l = p.m_prime, copysets_es(p)
    return {
        "Pm(3)": pois(3, p.rm) * l / math.comb(mp, 3),
        "Pd(3)": pois(3, p.rd) * l / math.comb(mp, 3),
        "Pmd(1,2)": pois(1, p.rm) * pois(2, p.rd) * 3 * l / (math.comb(mp, 1) * math.comb(mp, 2)),
        "Pmd(2,1)": pois(2, p.rm) * pois(1, p.rd) * 3 * l / (math.comb(mp, 2) * math.comb(mp, 1)),
    }


def relative_benefit(m, n, c, f, w=4, rm=DEFAULT_RM) -> float:
    """Eq. 3.12: P_loss(servers)/P_loss(embedded) over exactly-three-failure combinations."""
    p = validate(m, n, c, f, w, rm)
    return sum(terms_gp(p).values()) / sum(terms_es(p).values())


# ---------------------------------------------------------------- Monte Carlo

def build_copysets(n_nodes: int, w: int, rng: np.random.Generator, max_tries: int = 1000) -> list[frozenset]:
    """Copyset replication (Cidon et al.): w/2 random permutations, each cut into groups of 3.

    Permutations that would repeat an existing copyset are redrawn, so the system has
    exactly w·N/6 distinct copysets, the count the closed form assumes.
    """
    if n_nodes % 3 or w % 2:
        raise InvalidParameter(f"the simulation builds exact copysets, which needs a node count divisible by 3 "
                               f"(got {n_nodes}) and an even scatter width (got {w})")
    sets: set[frozenset] = set()
    for _ in range(w // 2):
        for _try in range(max_tries):
            perm = rng.permutation(n_nodes)
            new = {frozenset(int(x) for x in perm[i:i + 3]) for i in range(0, n_nodes, 3)}
            if not (new & sets):
                sets |= new
                break
        else:
            raise InvalidParameter(f"could not place {w // 2} disjoint permutations of {n_nodes} nodes without "
                                   f"repeating a copyset; use a smaller w or more nodes")
    return sorted(sets, key=sorted)


def _simulate_system(n_nodes: int, devs: int, copysets: list[frozenset], rm: float, rd: float,
                     trials: int, rng: np.random.Generator) -> np.ndarray:
    """Per-trial indicator sums of the four exactly-three-failure loss events (0, 1 or 2)."""
    cs = set(copysets)
    k = rng.poisson(rm, trials)
    j = rng.poisson(rd, trials)
    x = np.zeros(trials, dtype=np.int8)
    n_dev = n_nodes * devs
    for t in np.flatnonzero((k == 3) | (j == 3) | ((k == 1) & (j == 2)) | ((k == 2) & (j == 1))):
        kt, jt = int(k[t]), int(j[t])
        servers = rng.choice(n_nodes, size=kt, replace=False) if kt <= n_nodes else None
        devices = rng.choice(n_dev, size=jt, replace=False) if jt <= n_dev else None
        hit = 0
        if kt == 3 and servers is not None and frozenset(int(s) for s in servers) in cs:
            hit += 1                                            # (i) three servers of a copyset
        if jt == 3 and devices is not None:
            hosts, idx = devices // devs, devices % devs
            if len(set(idx.tolist())) == 1 and frozenset(int(h) for h in hosts) in cs:
                hit += 1                                        # (ii) same-index devices of a copyset
        if kt == 1 and jt == 2 and devices is not None:
            hosts, idx = devices // devs, devices % devs
            trio = {int(servers[0]), int(hosts[0]), int(hosts[1])}
            if idx[0] == idx[1] and len(trio) == 3 and frozenset(trio) in cs:
                hit += 1                                        # (iii) 1 server + 2 same-index devices
        if kt == 2 and jt == 1 and devices is not None:
            host = int(devices[0] // devs)
            trio = {int(servers[0]), int(servers[1]), host}
            if len(trio) == 3 and frozenset(trio) in cs:
                hit += 1                                        # (iii) 2 servers + 1 device
        x[t] = hit
    return x


@dataclass
class MCResult:
    closed_form_gp: float
    closed_form_es: float
    mc_gp: float
    mc_gp_ci: tuple[float, float]
    mc_es: float
    mc_es_ci: tuple[float, float]
    trials: int
    seed: int
    copysets_gp: int
    copysets_es: int

    @property
    def gp_agrees(self) -> bool:
        return self.mc_gp_ci[0] <= self.closed_form_gp <= self.mc_gp_ci[1]

    @property
    def es_agrees(self) -> bool:
        return self.mc_es_ci[0] <= self.closed_form_es <= self.mc_es_ci[1]

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(gp_agrees=self.gp_agrees, es_agrees=self.es_agrees)
        return d


def _ci(x: np.ndarray, z: float) -> tuple[float, tuple[float, float]]:
    mean = float(x.mean())
    half = z * float(x.std(ddof=1)) / math.sqrt(len(x)) if len(x) > 1 else float("inf")
    return mean, (mean - half, mean + half)


def monte_carlo(m, n, c, f, w=4, rm=0.5, trials: int = 200_000, seed: int = 0, z: float = 2.576) -> MCResult:
    """Simulate both systems and compare with the closed-form eq. 3.12 terms (z=2.576: 99% CI).

    Use a large R_m (e.g. 0.5) so three-failure events are frequent enough to sample;
    the closed-form terms are exact for any R_m.
    """
    p = validate(m, n, c, f, w, rm)
    if not isinstance(trials, int) or trials < 1000:
        raise InvalidParameter(f"trials must be an integer >= 1000, got {trials!r}")
    rng = np.random.default_rng(seed)
    cs_gp = build_copysets(p.m, p.w, rng)
    cs_es = build_copysets(p.m_prime, p.w, rng)
    x_gp = _simulate_system(p.m, p.n, cs_gp, p.rm, p.rd, trials, rng)
    x_es = _simulate_system(p.m_prime, 1, cs_es, p.rm, p.rd, trials, rng)
    mgp, cgp = _ci(x_gp, z)
    mes, ces = _ci(x_es, z)
    return MCResult(sum(terms_gp(p).values()), sum(terms_es(p).values()), mgp, cgp, mes, ces,
                    trials, seed, len(cs_gp), len(cs_es))


# ---------------------------------------------------------------- sweeps and figures

def sweep(vary: str, values, **fixed) -> list[dict]:
    """Relative benefit while one of m, n, c, f varies; when `c` is 'n' it follows n (c = n)."""
    out = []
    for v in values:
        kw = dict(fixed, **{vary: v})
        if kw.get("c") == "n":
            kw["c"] = kw["n"]
        out.append({**kw, "relative_benefit": relative_benefit(**kw)})
    return out


def figures_data(ms=range(5, 31), ns=(2, 4, 6, 8, 10, 12), cs=(1, 2, 4, 6, 8, 10, 12), w=4,
                 rm=DEFAULT_RM) -> dict:
    """The data behind thesis figs 3.13–3.18 (w = 4, c = n for the n figures, n = 12 for the c figures)."""
    ms = list(ms)
    figs = {}
    for tag, f in (("hdd", F_HDD), ("ssd", F_SSD)):
        figs[f"m_n_{tag}"] = {str(n): sweep("m", ms, n=n, c="n", f=f, w=w, rm=rm) for n in ns}
        figs[f"m_c_{tag}"] = {str(c): sweep("m", ms, n=12, c=c, f=f, w=w, rm=rm) for c in cs}
    figs["n_at_m10"] = {tag: sweep("n", list(range(2, 13)), m=10, c="n", f=f, w=w, rm=rm)
                        for tag, f in (("hdd", F_HDD), ("ssd", F_SSD))}
    figs["c_at_m10"] = {tag: sweep("c", list(range(1, 13)), m=10, n=12, f=f, w=w, rm=rm)
                        for tag, f in (("hdd", F_HDD), ("ssd", F_SSD))}
    return figs


FIGURE_TITLES = {
    "m_n_hdd": ("fig3_13_m_n_hdd.png", "Impact of m and n (c = n), HDD f = 2", "m", "n"),
    "m_c_hdd": ("fig3_14_m_c_hdd.png", "Impact of m and c (n = 12), HDD f = 2", "m", "c"),
    "m_n_ssd": ("fig3_15_m_n_ssd.png", "Impact of m and n (c = n), SSD f = 0.06", "m", "n"),
    "m_c_ssd": ("fig3_16_m_c_ssd.png", "Impact of m and c (n = 12), SSD f = 0.06", "m", "c"),
    "n_at_m10": ("fig3_17_n_at_m10.png", "Impact of n at m = 10 (c = n)", "n", "device"),
    "c_at_m10": ("fig3_18_c_at_m10.png", "Impact of c at m = 10 (n = 12)", "c", "device"),
}


def plot_figures(figs: dict, outdir) -> list[str]:
    """Write one PNG per figure (log-scale relative benefit) and return their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from pathlib import Path
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for key, (fname, title, xkey, lkey) in FIGURE_TITLES.items():
        if key not in figs:
            continue
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for label, rows in figs[key].items():
            ax.plot([r[xkey] for r in rows], [r["relative_benefit"] for r in rows], marker=".",
                    label=f"{lkey}={label}" if lkey != "device" else label.upper())
        ax.set_yscale("log")
        ax.set_xlabel(xkey)
        ax.set_ylabel("relative benefit P_gp / P_es")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / fname, dpi=110)
        plt.close(fig)
        paths.append(str(out / fname))
    return paths


def seed_claims(rm: float = DEFAULT_RM, w: int = 4) -> dict:
    """Where the thesis' 7.1 (HDD, n=4) and 20.7 (SSD, n=4) fall in eq. 3.12 (c = n)."""
    rows = []
    for m in range(5, 31):
        rows.append({"m": m, "hdd_n4": relative_benefit(m, 4, 4, F_HDD, w, rm),
                     "ssd_n4": relative_benefit(m, 4, 4, F_SSD, w, rm)})
    def nearest(key, target):
        r = min(rows, key=lambda r: abs(r[key] - target))
        return {"m": r["m"], "value": r[key], "published": target}
    return {"rm": rm, "w": w, "table": rows, "hdd_7.1": nearest("hdd_n4", 7.1),
            "ssd_20.7": nearest("ssd_n4", 20.7)}


def simulate_any_failures(m, n, c, f, w=4, rm=0.5, trials: int = 200_000, seed: int = 0, z: float = 2.576,
                          chunk: int = 20_000) -> dict:
    """P(data loss) with ANY number of simultaneous failures (what eqs 3.6/3.7 aim at).

    Loss = some copyset and device index d such that each of its three servers is down or
    has device d down. The thesis could not count N(k) in closed form and proposed
    simulation (§3.2.5 Discussion i); this is it. Returns both systems' probabilities
    with CIs and their ratio next to eq. 3.12's.
    """
    p = validate(m, n, c, f, w, rm)
    if not isinstance(trials, int) or trials < 1000:
        raise InvalidParameter(f"trials must be an integer >= 1000, got {trials!r}")
    rng = np.random.default_rng(seed)

    def system(nodes: int, devs: int) -> np.ndarray:
        cs = np.array([sorted(s) for s in build_copysets(nodes, p.w, rng)])
        out = []
        for lo in range(0, trials, chunk):
            t = min(chunk, trials - lo)
            k = np.minimum(rng.poisson(p.rm, t), nodes)
            j = np.minimum(rng.poisson(p.rd, t), nodes * devs)
            srv = rng.random((t, nodes)).argsort(axis=1).argsort(axis=1) < k[:, None]
            dev = (rng.random((t, nodes * devs)).argsort(axis=1).argsort(axis=1) < j[:, None]).reshape(t, nodes, devs)
            down = srv[:, :, None] | dev                                   # (t, nodes, devs)
            lost = np.zeros(t, dtype=bool)
            for a, b, cc in cs:
                lost |= (down[:, a] & down[:, b] & down[:, cc]).any(axis=1)
            out.append(lost)
        return np.concatenate(out).astype(np.float64)

    x_gp = system(p.m, p.n)
    x_es = system(p.m_prime, 1)
    gp, gp_ci = _ci(x_gp, z)
    es, es_ci = _ci(x_es, z)
    return {"params": asdict(p), "trials": trials, "seed": seed, "p_loss_gp": gp, "p_loss_gp_ci": gp_ci,
            "p_loss_es": es, "p_loss_es_ci": es_ci, "ratio": gp / es if es > 0 else None,
            "eq_3_12_ratio": sum(terms_gp(p).values()) / sum(terms_es(p).values())}
