import type { Metric, Registry } from 'prom-client';

// Counts made on the request and token paths, kept as plain numbers and handed to prom-client only when scraped.

/** Seconds: an HTTP request (1 ms to 1 min). */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

interface Series {
  labels: { route: string; method: string; status_class: string };
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); the last slot is past the largest bound. */
  buckets: Float64Array;
}

/**
 * The HTTP request counter and latency histogram, kept as plain numbers per series and handed to
 * prom-client only when scraped. prom-client's own counter and histogram hash and validate the labels
 * on every call, even through `labels()` children (5.5 µs a request, measured); this costs two map
 * lookups and three additions.
 */
export class HttpSeries {
  private readonly byRoute = new Map<string, Map<string, (Series | undefined)[]>>();
  private readonly all: Series[] = [];

  record(route: string | undefined, method: string, status: number, seconds: number) {
    const url = route ?? '(unmatched)';
    let byMethod = this.byRoute.get(url);
    if (!byMethod) {
      byMethod = new Map();
      this.byRoute.set(url, byMethod);
    }
    let byClass = byMethod.get(method);
    if (!byClass) {
      byClass = [];
      byMethod.set(method, byClass);
    }
    const index = Math.min(Math.max(Math.floor(status / 100), 1), 5) - 1;
    let series = byClass[index];
    if (!series) {
      series = {
        labels: { route: url, method, status_class: STATUS_CLASSES[index] },
        count: 0,
        sum: 0,
        buckets: new Float64Array(BUCKETS.length + 1),
      };
      byClass[index] = series;
      this.all.push(series);
    }
    series.count++;
    series.sum += seconds;
    let b = 0;
    while (b < BUCKETS.length && seconds > BUCKETS[b]) b++;
    series.buckets[b]++;
  }

  /** Registers the two metrics, read from the series at each scrape. */
  register(registry: Registry) {
    const all = this.all;
    const counter = {
      name: 'agentry_http_requests_total',
      help: 'HTTP requests answered, by route template, method and status class',
      type: 'counter',
      aggregator: 'sum',
      get: async () => ({ ...counter, values: all.map((s) => ({ labels: s.labels, value: s.count })) }),
      reset: () => {},
    };
    const name = 'agentry_http_request_duration_seconds';
    const histogram = {
      name,
      help: 'Time to answer an HTTP request (to the response head for streams), by route template, method and status class',
      type: 'histogram',
      aggregator: 'sum',
      get: async () => ({
        ...histogram,
        values: all.flatMap((s) => {
          let cumulative = 0;
          const values = BUCKETS.map((le, i) => {
            cumulative += s.buckets[i];
            return { labels: { ...s.labels, le }, value: cumulative, metricName: `${name}_bucket` };
          });
          values.push(
            { labels: { ...s.labels, le: '+Inf' as unknown as number }, value: s.count, metricName: `${name}_bucket` },
            { labels: s.labels as typeof s.labels & { le: number }, value: s.sum, metricName: `${name}_sum` },
            { labels: s.labels as typeof s.labels & { le: number }, value: s.count, metricName: `${name}_count` },
          );
          return values;
        }),
      }),
      reset: () => {},
    };
    registry.registerMetric(counter as unknown as Metric);
    registry.registerMetric(histogram as unknown as Metric);
  }
}

/**
 * A counter with one label, counted in a plain map and handed to prom-client at scrape: for counts
 * made on a hot path (every streamed token), where prom-client's label hashing would cost more than the event.
 */
export class PlainCounter {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly label: string,
  ) {}

  inc(value: string) {
    this.counts.set(value, (this.counts.get(value) ?? 0) + 1);
  }

  register(registry: Registry) {
    const { name, help, label, counts } = this;
    const metric = {
      name,
      help,
      type: 'counter',
      aggregator: 'sum',
      get: async () => ({ ...metric, values: [...counts].map(([v, n]) => ({ labels: { [label]: v }, value: n })) }),
      reset: () => {},
    };
    registry.registerMetric(metric as unknown as Metric);
  }
}

interface VecOptions {
  name: string;
  help: string;
  labelNames?: readonly string[];
  registers: Registry[];
}

/** The series of one label set. */
interface Point {
  labels: Record<string, string>;
  value: number;
  sum: number;
  buckets?: Float64Array;
}

/**
 * A counter (or, with buckets, a histogram) with prom-client's `inc(labels, n)` / `observe(labels, v)`,
 * each series found by its label values joined (one small string) instead of prom-client's sorted
 * hash and validation of every call: a run's metrics cost about 6 µs instead of 17.5 (measured, 200k runs).
 */
class PlainVec {
  private readonly points = new Map<string, Point>();
  private readonly labelNames: readonly string[];

  constructor(
    private readonly options: VecOptions,
    private readonly bounds?: readonly number[],
  ) {
    this.labelNames = options.labelNames ?? [];
    const { name, help } = options;
    const type = bounds ? 'histogram' : 'counter';
    const metric = { name, help, type, aggregator: 'sum', get: async () => ({ ...metric, values: this.values() }), reset: () => {} };
    for (const registry of options.registers) registry.registerMetric(metric as unknown as Metric);
  }

  protected point(labels: Record<string, string>): Point {
    let key = '';
    for (const l of this.labelNames) key += `${labels[l] ?? ''}\u0000`;
    let point = this.points.get(key);
    if (!point) {
      const own: Record<string, string> = {};
      for (const l of this.labelNames) own[l] = labels[l] ?? '';
      point = { labels: own, value: 0, sum: 0, buckets: this.bounds ? new Float64Array(this.bounds.length + 1) : undefined };
      this.points.set(key, point);
    }
    return point;
  }

  private values() {
    const name = this.options.name;
    const bounds = this.bounds;
    if (!bounds) return [...this.points.values()].map((p) => ({ labels: p.labels, value: p.value }));
    return [...this.points.values()].flatMap((p) => {
      let cumulative = 0;
      const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = bounds.map((le, i) => {
        cumulative += p.buckets![i];
        return { labels: { ...p.labels, le }, value: cumulative, metricName: `${name}_bucket` };
      });
      values.push(
        { labels: { ...p.labels, le: '+Inf' }, value: p.value, metricName: `${name}_bucket` },
        { labels: p.labels, value: p.sum, metricName: `${name}_sum` },
        { labels: p.labels, value: p.value, metricName: `${name}_count` },
      );
      return values;
    });
  }
}

export class PlainCounterVec extends PlainVec {
  constructor(options: VecOptions) {
    super(options);
  }

  inc(labels: Record<string, string> = {}, n = 1) {
    this.point(labels).value += n;
  }
}

export class PlainHistogramVec extends PlainVec {
  constructor(
    options: VecOptions & { buckets: readonly number[] },
    private readonly upper = options.buckets,
  ) {
    super(options, options.buckets);
  }

  observe(labels: Record<string, string>, seconds: number) {
    const point = this.point(labels);
    point.value++;
    point.sum += seconds;
    let b = 0;
    while (b < this.upper.length && seconds > this.upper[b]) b++;
    point.buckets![b]++;
  }
}
