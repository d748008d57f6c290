// A channel's grant (channel_grant.h) as FABRIC_OFFER and FABRIC_ACCEPT carry it
// (core/wire/fabric_frames.h): field for field, both ways, in this one place for the reducer
// and the worker alike. No checks here: the wire decoder checks the ranges, and
// checkPeerGrant / FabricChannel::connect what this end can do.
#pragma once

#include "core/transport/fabric/channel_grant.h"
#include "core/wire/fabric_frames.h"

namespace rs::transport::fabric {

wire::FabricGrant toWireGrant(const ChannelGrant& grant);
ChannelGrant fromWireGrant(const wire::FabricGrant& grant);

}  // namespace rs::transport::fabric
