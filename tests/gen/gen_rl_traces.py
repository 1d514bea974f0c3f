"""Reference traces for ember::rl's environments (tests/rl/envs_test.cpp): the dynamics of
Gymnasium's classic-control environments (gymnasium/envs/classic_control: cartpole.py,
acrobot.py, mountain_car.py, continuous_mountain_car.py, pendulum.py), written out from their
published equations in plain Python (Gymnasium is not packaged here), and ember's grid world.

Resets draw from splitmix64 as ember::rl::Rng does (Gymnasium's numpy generator cannot be
reproduced in C++), so a trace checks reset(seed) as well as every step. Physics is in double;
observations are rounded to float32 like Gymnasium's. Also: a GAE case and a running-statistics
case. Run with /usr/bin/python3; writes tests/data/rl/traces.json.
"""
import json
import math
import os
import random
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "rl", "traces.json")
M64 = (1 << 64) - 1


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


class Rng:
    """splitmix64, as ember/rl/rng.h."""

    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self, lo=0.0, hi=1.0):
        u = (self.next() >> 11) * 2.0 ** -53
        return lo + (hi - lo) * u


class CartPole:
    gravity, masscart, masspole = 9.8, 1.0, 0.1
    total_mass = masspole + masscart
    length = 0.5
    polemass_length = masspole * length
    force_mag, tau = 10.0, 0.02
    theta_threshold = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def reset(self, rng):
        self.state = [rng.uniform(-0.05, 0.05) for _ in range(4)]
        self.beyond = False
        return self.obs()

    def obs(self):
        return [f32(v) for v in self.state]

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + self.polemass_length * (theta_dot * theta_dot) * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * (costheta * costheta) / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = [x, x_dot, theta, theta_dot]
        terminated = (x < -self.x_threshold or x > self.x_threshold
                      or theta < -self.theta_threshold or theta > self.theta_threshold)
        reward = 1.0
        if terminated:
            if self.beyond:
                reward = 0.0
            self.beyond = True
        return self.obs(), reward, terminated


class Acrobot:
    dt = 0.2
    MAX_VEL_1, MAX_VEL_2 = 4 * math.pi, 9 * math.pi

    def reset(self, rng):
        self.state = [f32(rng.uniform(-0.1, 0.1)) for _ in range(4)]
        return self.obs()

    def obs(self):
        s = self.state
        return [f32(math.cos(s[0])), f32(math.sin(s[0])), f32(math.cos(s[1])), f32(math.sin(s[1])),
                f32(s[2]), f32(s[3])]

    @staticmethod
    def dsdt(s, a):
        m1 = m2 = l1 = 1.0
        lc1 = lc2 = 0.5
        I1 = I2 = 1.0
        g = 9.8
        theta1, theta2, dtheta1, dtheta2 = s
        d1 = m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * math.cos(theta2)) + I1 + I2
        d2 = m2 * (lc2 * lc2 + l1 * lc2 * math.cos(theta2)) + I2
        phi2 = m2 * lc2 * g * math.cos(theta1 + theta2 - math.pi / 2.0)
        phi1 = (-m2 * l1 * lc2 * (dtheta2 * dtheta2) * math.sin(theta2)
                - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * math.sin(theta2)
                + (m1 * lc1 + m2 * l1) * g * math.cos(theta1 - math.pi / 2) + phi2)
        ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * math.sin(theta2) - phi2) / (
            m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1)
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return [dtheta1, dtheta2, ddtheta1, ddtheta2]

    @staticmethod
    def wrap(x, m, M):
        diff = M - m
        while x > M:
            x = x - diff
        while x < m:
            x = x + diff
        return x

    def step(self, action):
        torque = float(action - 1)
        s = self.state
        dt = self.dt
        dt2 = dt / 2.0
        k1 = self.dsdt(s, torque)
        k2 = self.dsdt([s[i] + dt2 * k1[i] for i in range(4)], torque)
        k3 = self.dsdt([s[i] + dt2 * k2[i] for i in range(4)], torque)
        k4 = self.dsdt([s[i] + dt * k3[i] for i in range(4)], torque)
        ns = [s[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]) for i in range(4)]
        ns[0] = self.wrap(ns[0], -math.pi, math.pi)
        ns[1] = self.wrap(ns[1], -math.pi, math.pi)
        ns[2] = min(max(ns[2], -self.MAX_VEL_1), self.MAX_VEL_1)
        ns[3] = min(max(ns[3], -self.MAX_VEL_2), self.MAX_VEL_2)
        self.state = ns
        terminated = -math.cos(ns[0]) - math.cos(ns[1] + ns[0]) > 1.0
        return self.obs(), (0.0 if terminated else -1.0), terminated


class MountainCar:
    def reset(self, rng):
        self.state = [rng.uniform(-0.6, -0.4), 0.0]
        return [f32(v) for v in self.state]

    def step(self, action):
        position, velocity = self.state
        velocity += float(action - 1) * 0.001 + math.cos(3 * position) * (-0.0025)
        velocity = min(max(velocity, -0.07), 0.07)
        position += velocity
        position = min(max(position, -1.2), 0.6)
        if position == -1.2 and velocity < 0:
            velocity = 0.0
        terminated = position >= 0.5 and velocity >= 0
        self.state = [position, velocity]
        return [f32(position), f32(velocity)], -1.0, terminated


class MountainCarContinuous:
    def reset(self, rng):
        self.state = [f32(rng.uniform(-0.6, -0.4)), 0.0]
        return list(self.state)

    def step(self, action):
        position, velocity = self.state
        u = action[0]
        force = min(max(u, -1.0), 1.0)
        velocity += force * 0.0015 - 0.0025 * math.cos(3 * position)
        velocity = min(max(velocity, -0.07), 0.07)
        position += velocity
        position = min(max(position, -1.2), 0.6)
        if position == -1.2 and velocity < 0:
            velocity = 0.0
        terminated = position >= 0.45 and velocity >= 0
        reward = 100.0 if terminated else 0.0
        reward -= u * u * 0.1
        self.state = [f32(position), f32(velocity)]
        return list(self.state), reward, terminated


class Pendulum:
    g = 10.0

    def reset(self, rng):
        self.state = [rng.uniform(-math.pi, math.pi), rng.uniform(-1.0, 1.0)]
        return self.obs()

    def obs(self):
        th, thdot = self.state
        return [f32(math.cos(th)), f32(math.sin(th)), f32(thdot)]

    def step(self, action):
        th, thdot = self.state
        g, m, l, dt = self.g, 1.0, 1.0, 0.05
        u = min(max(action[0], -2.0), 2.0)
        an = ((th + math.pi) % (2 * math.pi)) - math.pi
        costs = an * an + 0.1 * (thdot * thdot) + 0.001 * (u * u)
        newthdot = thdot + (3 * g / (2 * l) * math.sin(th) + 3.0 / (m * (l * l)) * u) * dt
        newthdot = min(max(newthdot, -8.0), 8.0)
        newth = th + newthdot * dt
        self.state = [newth, newthdot]
        return self.obs(), -costs, False


class GridWorld:
    """ember's grid world with the options tests/rl/envs_test.cpp gives it."""
    width, height = 4, 3
    start = (0, 0)
    goals = {(2, 3)}
    walls = {(1, 1)}
    pits = {(1, 3)}
    slip = 0.2

    def reset(self, rng):
        self.rng = rng
        self.r, self.c = self.start
        return [float(self.r * self.width + self.c)]

    def step(self, action):
        d = action
        if self.slip > 0 and self.rng.uniform() < self.slip:
            d = (d + (1 if self.rng.uniform() < 0.5 else 3)) % 4
        dr, dc = [(-1, 0), (0, 1), (1, 0), (0, -1)][d]
        r, c = self.r + dr, self.c + dc
        if 0 <= r < self.height and 0 <= c < self.width and (r, c) not in self.walls:
            self.r, self.c = r, c
        here = (self.r, self.c)
        reward = 1.0 if here in self.goals else -1.0 if here in self.pits else -0.01
        return [float(self.r * self.width + self.c)], reward, here in self.goals or here in self.pits


def trace(env, seed, steps, policy, rng_actions):
    """Events: {"reset": obs} then {"action", "obs", "reward", "terminated"}; a terminal step is
    followed by a reset without a seed (the generator continues)."""
    rng = Rng(seed)
    events = [{"reset": env.reset(rng)}]
    last = events[0]["reset"]
    for _ in range(steps):
        a = policy(last, rng_actions)
        obs, reward, terminated = env.step(a)
        events.append({"action": a, "obs": obs, "reward": reward, "terminated": terminated})
        last = obs
        if terminated:
            if hasattr(env, "rng"):
                env.rng = rng
            last = env.reset(rng)
            events.append({"reset": last})
    return events


def gae_case():
    r = random.Random(5)
    T, N = 6, 2
    rewards = [round(r.uniform(-1, 1), 3) for _ in range(T * N)]
    values = [round(r.uniform(-1, 1), 3) for _ in range(T * N)]
    dones = [1 if r.random() < 0.25 else 0 for _ in range(T * N)]
    last = [0.5, -0.25]
    gamma, lam = 0.99, 0.95
    adv = [0.0] * (T * N)
    ret = [0.0] * (T * N)
    for i in range(N):
        g = 0.0
        for t in reversed(range(T)):
            k = t * N + i
            nv = last[i] if t == T - 1 else values[k + N]
            nt = 0.0 if dones[k] else 1.0
            delta = rewards[k] + gamma * nv * nt - values[k]
            g = delta + gamma * lam * nt * g
            adv[k] = g
            ret[k] = g + values[k]
    return {"num_envs": N, "gamma": gamma, "lambda": lam, "rewards": rewards, "values": values,
            "dones": dones, "last_values": last, "advantages": adv, "returns": ret}


def rms_case():
    """Gymnasium's RunningMeanStd fed one row at a time, then a batch of 3."""
    r = random.Random(9)
    rows = [[round(r.uniform(-2, 2), 4) for _ in range(3)] for _ in range(5)]
    mean, var, count = [0.0] * 3, [1.0] * 3, 1e-4

    def update(batch):
        nonlocal mean, var, count
        bc = float(len(batch))
        tot = count + bc
        for j in range(3):
            bm = sum(b[j] for b in batch) / bc
            bv = sum((b[j] - bm) * (b[j] - bm) for b in batch) / bc
            delta = bm - mean[j]
            m2 = var[j] * count + bv * bc + delta * delta * count * bc / tot
            mean[j] = mean[j] + delta * bc / tot
            var[j] = m2 / tot
        count = tot

    for row in rows:
        update([[f32(v) for v in row]])
    batch = [[f32(v) for v in row] for row in rows[:3]]
    update(batch)
    return {"rows": rows, "mean": mean, "var": var, "count": count}


def main():
    pr = random.Random(1)
    traces = {
        "CartPole-v1": trace(CartPole(), 42, 300, lambda o, r: r.randrange(2), pr),
        "Acrobot-v1": trace(Acrobot(), 7, 300,
                            lambda o, r: (2 if o[5] > 0 else 0) if r.random() < 0.9 else r.randrange(3), pr),
        "MountainCar-v0": trace(MountainCar(), 3, 300,
                                lambda o, r: (2 if o[1] >= 0 else 0) if r.random() < 0.9 else 1, pr),
        "MountainCarContinuous-v0": trace(
            MountainCarContinuous(), 11, 300,
            lambda o, r: [f32((1.0 if o[1] >= 0 else -1.0) * r.uniform(0.5, 1.0))], pr),
        "Pendulum-v1": trace(Pendulum(), 5, 200, lambda o, r: [f32(r.uniform(-2.0, 2.0))], pr),
        "GridWorld": trace(GridWorld(), 13, 200, lambda o, r: r.randrange(4), pr),
    }
    out = {"traces": traces, "gae": gae_case(), "running_mean_std": rms_case()}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    for name, ev in traces.items():
        ends = sum(1 for e in ev if "reset" in e) - 1
        print(f"{name}: {len(ev)} events, {ends} episode ends")


if __name__ == "__main__":
    main()
