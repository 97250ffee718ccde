"""PPGTA's learned models, trained once before its campaigns (§IV-A, §IV-B, §V-B, §VI-B, §VI-C).

:func:`train_models`: the scripted experts' demonstrations (§V-B), a feature extractor by masked
inverse dynamics (§IV-A), an imitation policy per behaviour (§IV-B) with its JS success threshold
(§VI-B), the object detector (§VI-C) and a texture oracle (beyond the paper).

* chosen: 64×64 frames, not 128×128, because of the CPU (the larger ones did not help);
* chosen: imitate the experts' intended actions, because their random ones are noise;
* chosen: the threshold is the per-step validation JS, our reading of §VI-B's "average value";
* chosen: patience 5 (path) and 10 (360°), because §V-D gives early stopping without one;
* chosen: no DAgger (``dagger_rounds=0``), because it made the path policy worse here;
* chosen: with a pretrained FE (``fe``) the imitation keeps the FE inverse dynamics trained, its
  features of the demonstrations computed once, because its trunk costs about fifty times the
  scratch CNN a frame on CPU.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from jgtest.agents import imitation, inverse_dynamics
from jgtest.checkpoint import config_from_dict
from jgtest.envs import park, park_experts
from jgtest.envs.park_experts import demonstrations
from jgtest.envs.park_shots import shots
from jgtest.envs.registration import make
from jgtest.files import write_atomically, write_json_atomically
from jgtest.nets import frame_encoder
from jgtest.novelty.preference import js_divergence
from jgtest.oracles import texture
from jgtest.seeds import check_seed
from jgtest.vision import detector as detection

BEHAVIOURS = ("path", "circle")


@dataclasses.dataclass(frozen=True)
class PPGTAModelsConfig:
    """What to train (:func:`train_models`). ``policy`` sizes (the paper's, §V-D) are shared by both
    behaviours' policies, the inverse-dynamics FE and the explorer's actor and critic; ``seed`` is
    the campaign's unless ``--models-seed`` names another (one set for several campaigns, as the
    paper trains once); ``dagger_rounds``: rounds of DAgger on the path imitation (beyond the paper;
    0, the paper's behaviour cloning); ``fe``: the frame encoder
    (:data:`jgtest.nets.frame_encoder.FRAME_ENCODERS`: learned from scratch, or ImageNet's
    EfficientNet-Lite0 as §IV-A's pretrained AlexNet), ``fe_tuning``: a pretrained trunk
    ``"frozen"`` or ``"fine-tuned"`` by inverse dynamics."""

    size: int = park.SIZE
    num_oois: int = 247
    seed: int = 0
    path_trajectories: int = 50
    path_steps: int = 200
    circle_trajectories: int = 150
    circle_steps: int = 70
    epsilon: float = park_experts.DEMONSTRATION_EPSILON
    k: int = 4
    cnn_layers: tuple[tuple[int, int, int], ...] = ((16, 8, 4), (32, 4, 2), (32, 3, 1))
    cnn_dense: int = 128
    policy: tuple[tuple[str, object], ...] = (
        ("local_hidden", 256),
        ("global_hidden", 1024),
        ("mlp", (512, 256)),
    )
    inverse_epochs: int = 5
    imitation_epochs: int = 40
    imitation_warmup: int = 10
    path_patience: int = 5
    circle_patience: int = 10
    imitation_batch: int = 8
    detector_shots: int = 2000
    detector_epochs: int = 40
    oracle_shots: int = 4000
    oracle_epochs: int = 30
    js_rule: str = "step"
    freeze_encoder: bool = False
    imitation_labels: str = "intended"
    dagger_rounds: int = 0
    fe: str = frame_encoder.FRAME_ENCODERS[0]
    fe_tuning: str = frame_encoder.TRUNK_TUNING[0]

    def __post_init__(self):
        check_seed(self.seed)
        frame_encoder.check(self.fe, self.fe_tuning)
        if self.dagger_rounds < 0:
            raise ValueError(f"dagger_rounds must be non-negative, got {self.dagger_rounds}")
        if self.dagger_rounds and self.imitation_labels != "intended":
            raise ValueError(
                "dagger_rounds needs imitation_labels='intended': the learner's own trajectories "
                "are labelled by the expert's intended actions"
            )
        if self.imitation_labels not in imitation.LABELS:
            raise ValueError(
                f"imitation_labels must be one of {imitation.LABELS}, got {self.imitation_labels!r}"
            )
        if self.js_rule not in imitation.JS_RULES:
            raise ValueError(
                f"js_rule must be one of {imitation.JS_RULES} (the paper's, as we read it, is "
                f"'step'), got {self.js_rule!r}"
            )
        if self.k < 1:
            raise ValueError(f"k (frames per step) must be at least 1, got {self.k}")
        for name in ("path_trajectories", "circle_trajectories"):
            if getattr(self, name) < 3:
                raise ValueError(
                    f"{name} must be at least 3 (a train/validation/test split), got "
                    f"{getattr(self, name)}"
                )
        for name in ("path_patience", "circle_patience"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"{name} (epochs without a better validation loss before stopping) must be at "
                    f"least 1, got {getattr(self, name)}"
                )
        for name in ("path_steps", "circle_steps", "detector_shots", "oracle_shots"):
            if getattr(self, name) < 2:
                raise ValueError(f"{name} must be at least 2, got {getattr(self, name)}")

    @classmethod
    def quick(cls, **overrides) -> PPGTAModelsConfig:
        """Small data and few epochs: the whole pipeline in a few minutes on 2 CPU cores
        (``--quick``)."""
        small = {
            "path_trajectories": 16,
            "path_steps": 120,
            "circle_trajectories": 30,
            "inverse_epochs": 2,
            "imitation_epochs": 12,
            "imitation_warmup": 3,
            "circle_patience": 5,
            "detector_shots": 800,
            "detector_epochs": 15,
            "oracle_shots": 1200,
            "oracle_epochs": 12,
            "policy": (("local_hidden", 64), ("global_hidden", 128), ("mlp", (128, 64))),
        }
        return cls(**{**small, **overrides})

    @property
    def game_kwargs(self) -> dict:
        return {"size": self.size, "num_oois": self.num_oois}

    def imitation(self, num_actions: int) -> imitation.ImitationConfig:
        return imitation.ImitationConfig(
            num_actions=num_actions,
            k=self.k,
            fit=dataclasses.replace(
                imitation.ImitationConfig.fit,
                batch_size=self.imitation_batch,
                epochs=self.imitation_epochs,
            ),
            warmup_epochs=min(self.imitation_warmup, self.imitation_epochs),
            freeze_encoder=self.freeze_encoder or frame_encoder.is_pretrained(self.fe),
            labels=self.imitation_labels,
            policy=(
                ("cnn_layers", self.cnn_layers),
                ("cnn_dense", self.cnn_dense),
                ("encoder", self.fe),
                *self.policy,
            ),
        )

    def behaviour_imitation(self, behaviour: str, num_actions: int) -> imitation.ImitationConfig:
        """:meth:`imitation` early-stopped with the behaviour's patience (``path_patience``,
        ``circle_patience``)."""
        config = self.imitation(num_actions)
        patience = getattr(self, f"{behaviour}_patience")
        return dataclasses.replace(config, fit=dataclasses.replace(config.fit, patience=patience))

    def inverse(self, num_actions: int) -> inverse_dynamics.InverseDynamicsConfig:
        return inverse_dynamics.InverseDynamicsConfig(
            num_actions,
            self.cnn_layers,
            self.cnn_dense,
            dataclasses.replace(
                inverse_dynamics.InverseDynamicsConfig.fit, epochs=self.inverse_epochs
            ),
            encoder=self.fe,
            trunk_tuning=self.fe_tuning,
        )

    @property
    def detector(self) -> detection.DetectorConfig:
        return detection.DetectorConfig(
            fit=dataclasses.replace(detection.DetectorConfig.fit, epochs=self.detector_epochs)
        )

    @property
    def oracle(self) -> texture.TextureOracleConfig:
        return texture.TextureOracleConfig(
            fit=dataclasses.replace(texture.TextureOracleConfig.fit, epochs=self.oracle_epochs)
        )


@dataclasses.dataclass(frozen=True)
class PPGTAModels:
    """The trained models: policies' parameters per behaviour, JS thresholds and reference
    distributions, the detector and the texture oracle."""

    config: PPGTAModelsConfig
    policies: dict  # behaviour -> ImitationPolicy parameters
    js: dict  # behaviour -> {"threshold", "reference" [A], ...}
    detector: detection.Detector
    oracle: texture.TextureOracle
    metrics: dict

    def imitation_config(self, num_actions: int = 9) -> imitation.ImitationConfig:
        return self.config.imitation(num_actions)


def train_models(
    config: PPGTAModelsConfig, out_dir: str | Path | None = None, log=print
) -> PPGTAModels:
    """Trains every model and, with ``out_dir``, saves them there (:func:`save_models`).

    1. **Demonstrations** (§V-B) from the scripted experts (:mod:`jgtest.envs.park_experts`):
       ``path_trajectories`` path-following walks of ``path_steps`` steps from
       ``ParkWorld.demo_region`` (where no evaluation episode starts) and ``circle_trajectories``
       360° walks, each starting as a campaign's test starts
       (:data:`jgtest.envs.park_experts.CIRCLE_START_DISTANCE`).
    2. **Masked inverse dynamics** (§IV-A) on both sets: the FE
       (:mod:`jgtest.agents.inverse_dynamics`).
    3. **Imitation** (§IV-B) of each behaviour, each fine-tuning its own copy of that FE
       (``freeze_encoder=True`` keeps it fixed), learning the experts' intended actions
       (``imitation_labels``), early-stopped with ``path_patience`` / ``circle_patience`` after the
       warm-up (:func:`jgtest.agents.supervised.fit`); the path policy then plays closed loop
       (:func:`path_dagger`); each behaviour's **JS success threshold** from its validation
       trajectories (``js_rule``, :func:`jgtest.agents.imitation.js_threshold`), the held-out
       trajectories' mean JS beside it.
    4. **The detector** (§VI-C) on ``detector_shots`` labelled shots
       (:mod:`jgtest.vision.detector`), its precision and recall at IoU 0.5 on the test split.
    5. **The texture oracle** (:mod:`jgtest.oracles.texture`) on ``oracle_shots`` close shots; its
       precision and recall on the held-out 360° walks.
    """
    env, params = make("ParkWorld-v0", **config.game_kwargs)
    key = jax.random.key(config.seed)
    k_path, k_circle, k_id, k_im, k_js, k_shots, k_det, k_oracle_shots, k_oracle = jax.random.split(
        key, 9
    )
    start = time.perf_counter()
    demos = {
        "path": demonstrations(
            env, params, k_path, "path", config.path_trajectories, config.path_steps, config.epsilon
        ),
        "circle": demonstrations(
            env,
            params,
            k_circle,
            "circle",
            config.circle_trajectories,
            config.circle_steps,
            config.epsilon,
        ),
    }
    log(
        f"demonstrations: {config.path_trajectories} path × {config.path_steps}, "
        f"{config.circle_trajectories} circle × {config.circle_steps} "
        f"({time.perf_counter() - start:.0f}s)"
    )
    inverse = inverse_dynamics.train(
        config.inverse(env.num_actions), [demos["path"], demos["circle"]], k_id, config.seed
    )
    log(
        f"inverse dynamics: test accuracy {inverse['test_accuracy']:.2f} (majority action "
        f"{inverse['chance']:.2f}) ({time.perf_counter() - start:.0f}s)"
    )
    im_config = config.imitation(env.num_actions)
    policies, js, metrics = (
        {},
        {},
        {"inverse_dynamics": {k: inverse[k] for k in ("test_accuracy", "chance", "history")}},
    )
    for i, behaviour in enumerate(BEHAVIOURS):
        patient = config.behaviour_imitation(behaviour, env.num_actions)
        out = imitation.train(
            patient,
            demos[behaviour],
            jax.random.fold_in(k_im, i),
            config.seed,
            encoder=inverse["encoder"],
        )
        if behaviour == "path":
            out, metrics["path_closed_loop"] = path_dagger(
                config,
                env,
                params,
                patient,
                demos["path"],
                out,
                inverse["encoder"],
                jax.random.fold_in(k_im, 100),
                log,
            )
        policies[behaviour] = out["params"]
        js[behaviour] = imitation.js_threshold(
            im_config,
            out["params"],
            demos[behaviour],
            out["val_idx"],
            jax.random.fold_in(k_js, i),
            config.js_rule,
        )
        held_out = imitation.played_distributions(
            im_config,
            out["params"],
            demos[behaviour],
            out["test_idx"],
            jax.random.fold_in(k_js, 10 + i),
        )
        test_js = np.asarray(js_divergence(held_out, js[behaviour]["reference"][None]))
        metrics[behaviour] = {
            "history": out["history"],
            "best_epoch": out["best_epoch"],
            "stopped_early": out["stopped_early"],
            "js_threshold": js[behaviour]["threshold"],
            "js_thresholds": js[behaviour]["thresholds"],
            "js_validation_mean": js[behaviour]["mean"],
            "js_test_mean": float(test_js.mean()),
            "js_test_below_threshold": float((test_js < js[behaviour]["threshold"]).mean()),
            "test_idx": out["test_idx"],
        }
        log(
            f"imitation {behaviour}: val CE {out['history'][out['best_epoch']]['val']:.3f} after "
            f"{len(out['history'])} epochs; "
            f"JS test {test_js.mean():.4f} vs threshold {js[behaviour]['threshold']:.4f} "
            f"({time.perf_counter() - start:.0f}s)"
        )
    det = detection.train(
        config.detector, shots(env, params, k_shots, config.detector_shots), k_det, config.seed
    )
    metrics["detector"] = {"test": det["test"], "history": det["history"]}
    log(
        f"detector: precision {det['test']['precision']:.2f}, recall {det['test']['recall']:.2f} "
        f"at IoU 0.5 ({time.perf_counter() - start:.0f}s)"
    )
    oracle_data = shots(env, params, k_oracle_shots, config.oracle_shots, max_distance=3.5)
    orc = texture.train(config.oracle, oracle_data, k_oracle, config.seed)
    walks = {k: np.asarray(v)[metrics["circle"]["test_idx"]] for k, v in demos["circle"].items()}
    metrics["oracle"] = {
        "test_accuracy": orc["test_accuracy"],
        "history": orc["history"],
        "walks": oracle_on_walks(orc["oracle"], params, walks),
    }
    log(
        f"texture oracle: crop accuracy {orc['test_accuracy']:.2f}; on held-out walks "
        f"{metrics['oracle']['walks']} ({time.perf_counter() - start:.0f}s)"
    )
    metrics["wall_s"] = round(time.perf_counter() - start, 1)
    models = PPGTAModels(config, policies, js, det["detector"], orc["oracle"], metrics)
    if out_dir is not None:
        save_models(models, out_dir)
    return models


def load_or_train(config: PPGTAModelsConfig, where: str | Path, log=print) -> PPGTAModels:
    """The models of ``config``: loaded from ``where`` when trained there (:func:`load_models`,
    which refuses models of another config), else trained there (:func:`train_models`)."""
    where = Path(where)
    if (where / "models.msgpack").exists():
        return load_models(where, config)
    log(
        f"training PPGTA's models into {where} (demonstrations, inverse dynamics, imitation, "
        "detector, texture oracle)"
    )
    return train_models(config, where, log=lambda line: log(f"  {line}"))


def path_dagger(
    config: PPGTAModelsConfig,
    env,
    params,
    im_config: imitation.ImitationConfig,
    demos: dict,
    trained: dict,
    encoder: dict,
    key,
    log=print,
) -> tuple[dict, list[dict]]:
    """``config.dagger_rounds`` rounds of DAgger (Ross et al., AISTATS 2011; beyond the paper) on
    the path imitation ``trained`` (:func:`jgtest.agents.imitation.train`'s output), and how each
    policy plays closed loop.

    Each round the latest policy plays ``path_trajectories`` walks of ``path_steps`` steps from the
    demonstrations' starts (``env.demo_region``), sampling its actions as the explorer it
    initialises does; the path follower labels every state it visits with its action there; the
    imitation is trained again, as before, on the demonstrations plus every round's walks (validated
    on the demonstrations' split alone). Why: behaviour cloning learns the follower's actions on the
    follower's states, where it is mostly on a pathway; the clone walks off one and, never shown how
    the follower comes back from where the clone goes, keeps walking forward over the grass.

    Returns:
      the final training output, and per policy (the first one's, then each round's) its walks'
      ``on_path`` (share of steps on a pathway) and ``agreement`` (share of steps where its action
      was the follower's), on and off a pathway.
    """
    rounds, walks = [], []
    for r in range(config.dagger_rounds + 1):
        policy = imitation.driver(im_config, trained["params"])
        walk = demonstrations(
            env,
            params,
            jax.random.fold_in(key, r),
            "path",
            config.path_trajectories,
            config.path_steps,
            driver=policy,
        )
        rounds.append(path_keeping(walk))
        log(f"path policy closed loop (DAgger round {r}): {rounds[-1]}")
        if r == config.dagger_rounds:
            break
        walks.append(walk)
        extra = {k: np.concatenate([np.asarray(w[k]) for w in walks]) for k in walks[0]}
        trained = imitation.train(
            im_config,
            demos,
            jax.random.fold_in(key, 1000 + r),
            config.seed,
            encoder=encoder,
            extra=extra,
        )
    return trained, rounds


def path_keeping(walks: dict) -> dict:
    """How walks (``on_path``, executed ``actions`` and the follower's ``intended`` ones,
    ``[N, T]``) kept to the pathways: ``on_path``, the share of steps on one, and
    ``agreement_on_path`` / ``agreement_off_path``, the share of those steps (and of the others)
    whose action was the follower's (None where there are none)."""
    on, agree = (
        np.asarray(walks["on_path"]),
        np.asarray(walks["actions"]) == np.asarray(walks["intended"]),
    )
    share = lambda where: round(float(agree[where].mean()), 4) if where.any() else None
    return {
        "on_path": round(float(on.mean()), 4),
        "agreement_on_path": share(on),
        "agreement_off_path": share(~on),
    }


def oracle_on_walks(oracle: texture.TextureOracle, params, walks: dict) -> dict:
    """The oracle's precision and recall over demonstrated 360° walks (``frames``, ``target_box``,
    ``target_pixels``, ``targets``), each judged on its frames as a campaign judges a test."""
    probabilities = np.asarray(
        jax.jit(oracle.probabilities)(
            jnp.asarray(walks["frames"]), jnp.asarray(walks["target_box"])
        )
    )
    shown = np.asarray(walks["target_pixels"]) >= oracle.config.min_pixels
    flagged = [oracle.judge(p, s)[0] for p, s in zip(probabilities, shown)]
    return texture.walk_precision_recall(
        np.array(flagged), np.asarray(params.ooi_bug)[np.asarray(walks["targets"])] > 0
    )


def save_models(models: PPGTAModels, out_dir: str | Path) -> None:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    state = {
        "policies": models.policies,
        "detector": models.detector.params,
        "oracle": models.oracle.params,
        "reference": {b: np.asarray(models.js[b]["reference"]) for b in BEHAVIOURS},
    }
    js = {b: {k: v for k, v in models.js[b].items() if k != "reference"} for b in BEHAVIOURS}
    write_json_atomically(
        out_dir / "models.json",
        {"config": dataclasses.asdict(models.config), "js": js, "metrics": models.metrics},
    )
    write_atomically(
        out_dir / "models.msgpack", serialization.msgpack_serialize(jax.device_get(state))
    )  # last: its presence means "trained"


def load_models(out_dir: str | Path, config: PPGTAModelsConfig | None = None) -> PPGTAModels:
    """The models :func:`save_models` wrote in ``out_dir``, trained with ``config`` (checked;
    default: the config they were trained with, from ``models.json``).

    Raises:
      FileNotFoundError: no models there. ValueError: they were trained with another config.
    """
    out_dir = Path(out_dir)
    if not (out_dir / "models.msgpack").exists():
        command = [
            "jgtest",
            "run",
            "ppgta",
            "--game",
            "ParkWorld-v0",
            "--ppgta-models",
            str(out_dir),
        ]
        raise FileNotFoundError(
            f"no PPGTA models in {out_dir} (train them with `{shlex.join(command)}`)"
        )
    meta = json.loads((out_dir / "models.json").read_text())
    trained = config_from_dict(
        PPGTAModelsConfig, meta["config"]
    )  # a setting added since they were trained: its default
    if config is None:
        config = trained
    elif trained != config:
        differ = sorted(
            field.name
            for field in dataclasses.fields(config)
            if getattr(trained, field.name) != getattr(config, field.name)
        )
        raise ValueError(
            f"the models in {out_dir} were trained with another config (it differs in "
            f"{', '.join(differ)}); "
            "retrain them or pass the same settings"
        )
    state = serialization.msgpack_restore((out_dir / "models.msgpack").read_bytes())
    js = {b: {**meta["js"][b], "reference": jnp.asarray(state["reference"][b])} for b in BEHAVIOURS}
    det = detection.Detector(
        config.detector, state["detector"], make("ParkWorld-v0", **config.game_kwargs)[0].camera.res
    )
    return PPGTAModels(
        config,
        state["policies"],
        js,
        det,
        texture.TextureOracle(config.oracle, state["oracle"]),
        meta["metrics"],
    )
