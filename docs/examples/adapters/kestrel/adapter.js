// Kestrel Express: one JSON object per scan, nested, with numeric event
// codes and a UTC timestamp in milliseconds.
const STATUS = {
  1001: "info_received",    // shipment data received
  2001: "picked_up",        // collected from the shipper
  3001: "in_transit",       // arrived at a hub
  3002: "in_transit",       // departed a hub
  4001: "out_for_delivery", // on the courier's van
  5001: "delivered",
  6001: "failed_attempt",   // nobody home; a card was left
  7001: "exception",        // damaged, held by customs, address problem
  8001: "returned",
};

function transform(callback) {
  const body = callback.body;
  const scan = body.event;
  // 9xxx codes are Kestrel's own (label printed, manifest closed): no event.
  if (scan.code >= 9000) {
    return null;
  }
  const status = STATUS[scan.code];
  if (status === undefined) {
    throw new Error("unknown Kestrel event code " + scan.code);
  }
  const at = new Date(scan.timestamp_ms).toISOString();
  const place = scan.facility || {};
  return {
    type: "tracking.updated",
    ordering_key: body.shipment.awb,
    merchant: body.shipment.account.number,
    occurred_at: at,
    data: {
      tracking_number: body.shipment.awb,
      carrier: callback.carrier,
      status: status,
      status_text: scan.description,
      occurred_at: at,
      location: {city: place.city, province: place.state, country: place.country_iso2},
      courier: scan.driver ? {name: scan.driver.display_name} : undefined,
    },
  };
}
